// The points behind the headline figures, timed again all through a calibration.
//
// On a shared host the fastest sample of a point depends on when it ran: another tenant can slow
// one kind of kernel to half its speed for seconds or minutes while others run as fast as ever,
// and a whole category (every f32 convolution) can come out a quarter slower in one run than in
// the next (docs/methodology.md, "Noise: headline figures from the whole run"). A point measured
// once, in a fraction of a second, is one draw; a figure drawn from samples spread over the whole
// run is the same run after run (the sentinel, a few samples between every point, finds the same
// fastest time to 0.1%).
//
// So the fastest points of each category (FMA, GEMM and convolution per dtype, main-memory triad)
// stay candidates: short bursts of them run between points for a share of the elapsed time, and
// the best few are measured once more at the end. Every sample counts: a candidate's figure is the
// summary of all its samples, the fastest being the capability figure. The pool holds more
// candidates than are confirmed, because a point measured in a slow spell ranks too low to be
// confirmed on its first figure; its bursts can lift it back.
//
// The burst time is shared among the categories by burst time per second since each joined, over
// the category's claim: 1 when its bursts come within 3% of their candidate's best, up to 4 when
// they seldom do (main memory while other tenants load it). Within a category the same measure is
// weighted by (rate / the category's best)^4. Settled categories get about the same time, a
// 0.1 ms GEMM many more bursts than a 30 ms convolution, the candidates near the top most of
// their category's time, and a late arrival is not made up for all at once.
//
// A burst that finds its candidate much faster than its typical time has found a fast spell, and
// the watch stays on it (Options::spell_s): the spell's top is then drawn from many samples, not
// from the three that found it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend.hpp"
#include "core/stats.hpp"

namespace truepeak {

class PeakWatch {
 public:
  struct Options {
    int pool = 3;       // candidates kept per category
    int confirmed = 3;  // of them, the fastest measured again at the end
    // Bursts run while they have taken less than this fraction of the elapsed time (0: none).
    double share = 0;
    // Keep each candidate's kernel between uses (else it is made, and checked, again when needed).
    bool keep_kernels = false;
    StopRule burst_rule;
    // Beyond `pool`, a point whose rate is within this fraction of its category's best joins too,
    // up to `most` candidates in all (0: the pool alone). On a shared host both looks at a
    // category's best point can come out 10-15% low, below the pool's slowest, which lie within a
    // few percent of one another; only bursts lift such a point back.
    double admit_within = 0;
    int most = 0;
    // In the categories of `spell_categories`, a burst that finds its candidate in a fast spell
    // (its fastest sample at least kSpellGain times the rate of the candidate's typical time, and
    // near its best or beyond) is followed by more bursts of it while they stay that fast, for up
    // to `spell_s`, and up to `spell_budget_s` a category in all. On a shared host main memory can
    // run its triad at half its best for minutes at a time, then near its best for a minute or so
    // (docs/methodology.md, "Main-memory spells"): three samples of such a spell land anywhere from
    // three quarters of its top to the top, a second of them on its top. Spells count to the
    // share, not to their category's claim; the companions' bursts after a spell (accompany) count
    // to the budget, and may take it a little past.
    std::vector<std::string> spell_categories = {};
    double spell_s = 0;
    double spell_budget_s = 0;
    // A burst of such a category that comes near its candidate's best without being a spell (the
    // candidate's first look already fell in a fast spell, so no later burst stands out from its
    // typical time) also times the companions, at most once every `companion_every_s` (0: never),
    // within the spell budget. Otherwise a calibration whose main-memory triad met a fast spell on
    // its first look finds no spell after it, and its companions keep the figure of their one look,
    // which may have fallen in a slow spell and taken half as long again as in a fast one.
    double companion_every_s = 0;
  };
  // Writes a candidate's figures back to its point: the summary of all its samples and the
  // implementation and layout of the kernel that ran the fastest one.
  using Apply = std::function<void(const Summary&, const std::string& impl, const std::string& layout)>;
  using Make = std::function<std::unique_ptr<Kernel>()>;

  explicit PeakWatch(Options options) : options_(std::move(options)) {}

  // A point just measured (its kernel, already checked, and its samples). It becomes a candidate
  // of `category` when its rate (work over its fastest sample) is among the category's best
  // `pool`, or within `admit_within` of the best while there are fewer than `most`; else, when it
  // is faster than the slowest candidate, it takes that one's place. Otherwise nothing is kept.
  // `typical_s`: the median of its quietest look so far (0: the median of `samples`).
  void offer(const std::string& category, const std::string& what, double work, Make make,
             std::unique_ptr<Kernel> kernel, const std::vector<double>& samples, Apply apply,
             double typical_s = 0);

  // A point timed with the spells of `category` (one of Options::spell_categories): after each
  // spell a burst finds there, the companion gets a burst too. Main memory's other points (its
  // copies, in-place updates and reorders) otherwise keep the figure of whichever spell their one
  // look fell in: the rate of a reorder of 100 MB can differ by more than half from one calibration
  // to the next, and the estimate of a network whose layout changes move such tensors moves by a
  // fifth with it (docs/methodology.md, "Main-memory spells"). Its kernel is kept
  // (Options::keep_kernels) or it is not taken; the confirmation lets it go. `typical_s` as for
  // offer().
  void accompany(const std::string& category, const std::string& what, double work, std::unique_ptr<Kernel> kernel,
                 const std::vector<double>& samples, Apply apply, double typical_s = 0);

  // Runs bursts while bursts have taken less than the share of `elapsed_s`.
  void tick(double elapsed_s, const std::atomic<bool>* stop);

  // Runs bursts of the unsettled categories only (claim at least `min_claim`: their bursts seldom
  // come near their best) for `seconds`, shared among them as in tick(). Returns the seconds
  // spent: less when no category is unsettled, or none is left to time.
  double extend(double seconds, double min_claim, const std::atomic<bool>* stop);

  // Measures the `confirmed` fastest candidates of each category once more with the rule of their
  // category (category order as first offered, fastest first) and reports each: `done(what,
  // rate)`, rate being the work per second of the candidate's fastest sample so far. The others
  // leave the pool.
  // A candidate whose kernel fails (cannot be made or checked again, or throws) is reported with
  // `failed(category, what, reason)` and confirmed no more. After the confirmation the watch is
  // closed: no more bursts, and only the confirmed candidates are left.
  void confirm(const std::function<StopRule(const std::string& category)>& rule_for,
               const std::atomic<bool>* stop,
               const std::function<void(const std::string& what, double rate)>& done,
               const std::function<void(const std::string& category, const std::string& what,
                                        const std::string& reason)>& failed = {});

  // About how long confirm() would take now with these rules (expected_time_s over the candidates
  // it would measure, at their typical time a run); 0 once confirmed.
  double confirm_time_s(const std::function<StopRule(const std::string& category)>& rule_for) const;

  // Candidates now kept, over all categories.
  std::size_t candidates() const;
  // How many candidates confirm() will measure: per category, the `confirmed` fastest that have
  // not failed.
  std::size_t to_confirm() const;
  // Whether the point offered as `what` is a candidate now.
  bool holds(const std::string& what) const;
  int bursts() const { return bursts_; }
  nlohmann::json report() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Candidate {
    std::string what;
    double work = 0;
    Make make;
    std::unique_ptr<Kernel> kernel;
    std::vector<double> samples;
    double best_s = 0;
    // The lowest median of its looks: its first measurement and its confirmation (bursts, a few
    // samples each, are not looks).
    double typical_s = 0;
    std::string impl, layout;  // of the kernel that ran the fastest sample
    Apply apply;
    Clock::time_point since;  // a candidate since then
    double burst_time_s = 0;
    int bursts = 0;
    bool confirmed = false;
    // Its kernel failed (could not be made or checked again, or threw while timed): its figures
    // stay as they were, and it is timed no more.
    bool failed = false;
    std::string failure;
    double rate() const { return work / best_s; }
  };
  struct Category {
    std::string name;
    std::vector<Candidate> candidates;
    Clock::time_point since;
    double burst_time_s = 0;
    int bursts = 0;
    int near_best = 0;  // bursts whose fastest sample came within kNearBest of their candidate's best
    int spells = 0;     // fast spells found (Options::spell_s)
    double spell_time_s = 0;
    std::vector<Candidate> companions = {};  // timed after each spell (accompany)
    int companion_rounds = 0;  // times the companions were timed after a burst near its best
    std::optional<Clock::time_point> companions_timed;  // when they last were, after a spell or such a burst
  };
  // A burst this close to its candidate's best rate (or faster) finds the figure where it was, to
  // the precision that two calibrations should agree on (3%). Within 1%, even the FMA kernel's
  // bursts on a shared host come near its best only a few times in a thousand, and every category
  // would claim the most.
  static constexpr double kNearBest = 0.97;
  // A category whose bursts seldom come near its best claims up to this many times the burst time
  // of one whose bursts always do.
  static constexpr double kMaxClaim = 4.0;
  // A burst this much faster than its candidate's typical time found a fast spell: more than the
  // few percent of a compute kernel's ordinary jitter, less than main memory's 2x between spells.
  static constexpr double kSpellGain = 1.2;
  static double claim(const Category& cat);
  // The category of that name, added (empty, since now) when there is none.
  Category& category_named(const std::string& name);

  // Times `c` with `rule`, adds the samples and writes the figures back; `look`: a full look
  // (the confirmation), whose median may lower the candidate's typical time. False when its
  // kernel could not be made again.
  bool time(Candidate& c, const StopRule& rule, bool look, const std::atomic<bool>* stop);
  // The category and candidate whose claim on burst time is the least met; categories whose claim
  // is below `min_claim` are passed over.
  std::pair<Category*, Candidate*> next_for_burst(double min_claim = 0);
  // One burst of the next candidate (and the spell it finds, if it finds one, to `until` at the
  // latest): its time counted to it, its category and the watch. False when no candidate is left
  // to time.
  bool burst(double min_claim, const std::atomic<bool>* stop,
             std::chrono::steady_clock::time_point until = std::chrono::steady_clock::time_point::max());
  // Whether the burst of `c` that took its samples from `from` on found a fast spell to stay on
  // (`best_rate`: its rate before the burst).
  bool spell_starts(const Category& cat, const Candidate& c, std::size_t from, double best_rate) const;
  // One burst of each of the category's companions, until `until` at the latest; how many ran.
  int time_companions(Category& cat, Clock::time_point until, const std::atomic<bool>* stop);
  // Whether a burst of the category near its best also times its companions
  // (Options::companion_every_s).
  bool companions_due(const Category& cat) const;
  // The fastest of `c`'s samples from `from` on (there must be one).
  static double fastest_since(const Candidate& c, std::size_t from);
  // That sample as a rate over its typical time's (0 without such a sample).
  static double gain_since(const Candidate& c, std::size_t from);
  // A candidate of these figures (its kernel's implementation and layout, not the kernel).
  static Candidate candidate(const std::string& what, double work, Make make, const Kernel* kernel,
                             const std::vector<double>& samples, Apply apply, double typical_s);
  // Whether `category` has spells (Options::spell_categories, with spell time).
  bool has_spells(const std::string& category) const;
  // The candidates of `cat` that confirm() would measure: the `confirmed` fastest that have not
  // failed, fastest first.
  std::vector<const Candidate*> to_be_confirmed(const Category& cat) const;

  Options options_;
  std::vector<Category> categories_;
  double burst_time_s_ = 0;
  double extended_s_ = 0;  // of it, in extend()
  int bursts_ = 0;
  bool closed_ = false;  // confirmed: no more bursts
};

}  // namespace truepeak
