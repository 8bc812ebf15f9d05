#include "calibrate/peak_watch.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <new>

#include "calibrate/runner.hpp"
#include "core/error.hpp"

namespace truepeak {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Burst time per second since `since` (a category's or a candidate's claim on the next burst).
double burst_rate(double burst_time_s, std::chrono::steady_clock::time_point since) {
  return burst_time_s / std::max(seconds_since(since), 1e-3);
}

// Bursts per tick at most, as a multiple of the candidates kept: a bound for kernels that take no
// time at all.
constexpr std::size_t kMaxBurstsPerCandidate = 8;

bool raised(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(); }

}  // namespace

void PeakWatch::offer(const std::string& category, const std::string& what, double work, Make make,
                      std::unique_ptr<Kernel> kernel, const std::vector<double>& samples,
                      Apply apply, double typical_s) {
  if (samples.empty() || work <= 0 || options_.pool <= 0) return;
  Category* cat = &category_named(category);
  // Its time runs from its first candidate (companions may have named it before).
  if (cat->candidates.empty() && cat->bursts == 0) cat->since = Clock::now();
  Candidate c = candidate(what, work, std::move(make), kernel.get(), samples, std::move(apply), typical_s);
  if (options_.keep_kernels) c.kernel = std::move(kernel);

  auto& kept = cat->candidates;
  double best_rate = 0;
  for (const auto& k : kept)
    if (!k.failed) best_rate = std::max(best_rate, k.rate());
  const bool near_best = options_.admit_within > 0 && c.rate() >= (1 - options_.admit_within) * best_rate;
  if (kept.size() < static_cast<std::size_t>(options_.pool) ||
      (near_best && kept.size() < static_cast<std::size_t>(options_.most))) {
    kept.push_back(std::move(c));
    return;
  }
  auto slowest = std::min_element(kept.begin(), kept.end(),
                                  [](const Candidate& a, const Candidate& b) { return a.rate() < b.rate(); });
  if (c.rate() > slowest->rate()) *slowest = std::move(c);  // the old kernel is freed here
}

PeakWatch::Candidate PeakWatch::candidate(const std::string& what, double work, Make make, const Kernel* kernel,
                                          const std::vector<double>& samples, Apply apply, double typical_s) {
  Candidate c;
  c.what = what;
  c.work = work;
  c.make = std::move(make);
  c.samples = samples;
  c.best_s = *std::min_element(samples.begin(), samples.end());
  c.typical_s = typical_s > 0 ? typical_s : median(samples);
  if (kernel) {
    c.impl = kernel->impl();
    c.layout = kernel->layout();
  }
  c.apply = std::move(apply);
  c.since = Clock::now();
  return c;
}

bool PeakWatch::has_spells(const std::string& category) const {
  const auto& names = options_.spell_categories;
  return options_.spell_s > 0 && std::find(names.begin(), names.end(), category) != names.end();
}

PeakWatch::Category& PeakWatch::category_named(const std::string& name) {
  auto cat = std::find_if(categories_.begin(), categories_.end(), [&](const Category& c) { return c.name == name; });
  if (cat != categories_.end()) return *cat;
  Category added;
  added.name = name;
  added.since = Clock::now();
  categories_.push_back(std::move(added));
  return categories_.back();
}

void PeakWatch::accompany(const std::string& category, const std::string& what, double work,
                          std::unique_ptr<Kernel> kernel, const std::vector<double>& samples, Apply apply,
                          double typical_s) {
  if (!kernel || samples.empty() || work <= 0 || !options_.keep_kernels || !has_spells(category)) return;
  const auto not_made_again = []() -> std::unique_ptr<Kernel> {
    throw Error("a companion's kernel is not made again");
  };
  Candidate c = candidate(what, work, not_made_again, kernel.get(), samples, std::move(apply), typical_s);
  c.kernel = std::move(kernel);
  category_named(category).companions.push_back(std::move(c));
}

bool PeakWatch::time(Candidate& c, const StopRule& rule, bool look, const std::atomic<bool>* stop) {
  std::unique_ptr<Kernel> made;
  Kernel* kernel = c.kernel.get();
  try {
    if (!kernel) {
      made = c.make();
      made->check();  // a kernel made again is checked again before its time is trusted
      kernel = made.get();
    }
    const PointResult result = measure(*kernel, rule, stop);
    c.samples.insert(c.samples.end(), result.samples.begin(), result.samples.end());
    if (look) c.typical_s = std::min(c.typical_s, result.summary.median_s);
    if (result.summary.min_s < c.best_s) {
      c.best_s = result.summary.min_s;
      c.impl = kernel->impl();
      c.layout = kernel->layout();
    }
  } catch (const std::bad_alloc&) {
    c.failed = true;
    c.failure = "out of memory";
  } catch (const std::exception& e) {
    c.failed = true;
    c.failure = e.what();
  }
  if (c.failed) {
    c.kernel.reset();
    return false;
  }
  Summary all = summarize(c.samples);
  all.typical_s = c.typical_s;
  c.apply(all, c.impl, c.layout);
  if (options_.keep_kernels && made) c.kernel = std::move(made);
  return true;
}

std::pair<PeakWatch::Category*, PeakWatch::Candidate*> PeakWatch::next_for_burst(double min_claim) {
  Category* next_cat = nullptr;
  Candidate* next = nullptr;
  double least_cat = 0;
  for (auto& cat : categories_) {
    if (claim(cat) < min_claim) continue;
    double best_rate = 0;
    for (const auto& c : cat.candidates) best_rate = std::max(best_rate, c.rate());
    Candidate* pick = nullptr;
    double least = 0;
    for (auto& c : cat.candidates) {
      if (c.failed) continue;
      // Time goes where it can move the headline: a candidate at 90% of the category's best
      // claims two thirds of the best one's time, at 75% a third, at 50% a sixteenth.
      const double weight = std::pow(c.rate() / best_rate, 4.0);
      const double rate = burst_rate(c.burst_time_s, c.since) / std::max(weight, 1e-6);
      if (!pick || rate < least) {
        pick = &c;
        least = rate;
      }
    }
    if (!pick) continue;
    const double rate = burst_rate(cat.burst_time_s, cat.since) / claim(cat);
    if (!next_cat || rate < least_cat) {
      next_cat = &cat;
      next = pick;
      least_cat = rate;
    }
  }
  return {next_cat, next};
}

// Burst time goes where the headline is least settled: a category claims the inverse of the share
// of its bursts that came near their candidate's best (counted as if one of two more had, so that
// new categories start even), between 1 and kMaxClaim. On a shared machine main memory's fast
// samples come seldom when other tenants load it; the vector peak's come every burst.
double PeakWatch::claim(const Category& cat) {
  const double near_share = (cat.near_best + 1.0) / (cat.bursts + 2.0);
  return std::clamp(1.0 / near_share, 1.0, kMaxClaim);
}

double PeakWatch::fastest_since(const Candidate& c, std::size_t from) {
  return *std::min_element(c.samples.begin() + static_cast<std::ptrdiff_t>(from), c.samples.end());
}

double PeakWatch::gain_since(const Candidate& c, std::size_t from) {
  if (c.samples.size() <= from || !(c.typical_s > 0)) return 0;
  return c.typical_s / fastest_since(c, from);
}

bool PeakWatch::spell_starts(const Category& cat, const Candidate& c, std::size_t from, double best_rate) const {
  if (!has_spells(cat.name) || cat.spell_time_s >= options_.spell_budget_s || c.failed || c.samples.size() <= from)
    return false;
  return gain_since(c, from) >= kSpellGain && c.work / fastest_since(c, from) >= kNearBest * best_rate;
}

bool PeakWatch::burst(double min_claim, const std::atomic<bool>* stop, Clock::time_point until) {
  const auto [cat, c] = next_for_burst(min_claim);
  if (!c) return false;
  const double best_rate = c->rate();
  const std::size_t before = c->samples.size();
  const auto start = Clock::now();
  time(*c, options_.burst_rule, false, stop);
  // Only a burst that timed something tells how settled the category is.
  bool near_best = false;
  if (c->samples.size() > before) {
    near_best = c->work / fastest_since(*c, before) >= kNearBest * best_rate;
    if (near_best) ++cat->near_best;
    ++cat->bursts;
  }
  const double spent = seconds_since(start);
  burst_time_s_ += spent;
  cat->burst_time_s += spent;
  c->burst_time_s += spent;
  ++c->bursts;
  ++bursts_;
  // A fast spell: more bursts of the candidate while they keep finding it. Its time is the
  // watch's (the share), not charged to the category or the candidate: their bursts go on as
  // before, to find the next spell.
  if (spell_starts(*cat, *c, before, best_rate)) {
    const auto spell_start = Clock::now();
    const double spell_s = std::min(options_.spell_s, options_.spell_budget_s - cat->spell_time_s);
    const auto spell_end = std::min(until, spell_start + std::chrono::duration_cast<Clock::duration>(
                                                             std::chrono::duration<double>(spell_s)));
    if (spell_start < spell_end) ++cat->spells;
    for (std::size_t from = c->samples.size(); Clock::now() < spell_end && !raised(stop) && !c->failed;
         from = c->samples.size()) {
      time(*c, options_.burst_rule, false, stop);
      if (gain_since(*c, from) < kSpellGain) break;
    }
    // The category's other points, in the same spell.
    if (spell_start < spell_end) time_companions(*cat, until, stop);
    const double in_spell = seconds_since(spell_start);
    cat->spell_time_s += in_spell;
    burst_time_s_ += in_spell;
  } else if (near_best && companions_due(*cat)) {
    // No spell to stand out, but the candidate runs as fast as it has: so may the companions.
    const auto companions_start = Clock::now();
    if (time_companions(*cat, until, stop) > 0) ++cat->companion_rounds;
    const double spent_on_them = seconds_since(companions_start);
    cat->spell_time_s += spent_on_them;
    burst_time_s_ += spent_on_them;
  }
  return true;
}

int PeakWatch::time_companions(Category& cat, Clock::time_point until, const std::atomic<bool>* stop) {
  int timed = 0;
  for (auto& companion : cat.companions) {
    if (Clock::now() >= until || raised(stop)) break;
    if (companion.failed) continue;
    time(companion, options_.burst_rule, false, stop);
    ++timed;
  }
  if (timed > 0) cat.companions_timed = Clock::now();
  return timed;
}

bool PeakWatch::companions_due(const Category& cat) const {
  if (options_.companion_every_s <= 0 || !has_spells(cat.name) || cat.companions.empty() ||
      cat.spell_time_s >= options_.spell_budget_s)
    return false;
  return !cat.companions_timed ||
         std::chrono::duration<double>(Clock::now() - *cat.companions_timed).count() >= options_.companion_every_s;
}

void PeakWatch::tick(double elapsed_s, const std::atomic<bool>* stop) {
  if (options_.share <= 0 || closed_) return;
  const std::size_t most = kMaxBurstsPerCandidate * candidates();
  for (std::size_t i = 0; i < most && burst_time_s_ < options_.share * elapsed_s && !raised(stop); ++i)
    if (!burst(0, stop)) return;
}

double PeakWatch::extend(double seconds, double min_claim, const std::atomic<bool>* stop) {
  if (closed_ || seconds <= 0) return 0;
  const auto start = Clock::now();
  const auto until = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < until && !raised(stop))
    if (!burst(min_claim, stop, until)) break;
  extended_s_ += seconds_since(start);
  return seconds_since(start);
}

void PeakWatch::confirm(const std::function<StopRule(const std::string& category)>& rule_for,
                        const std::atomic<bool>* stop,
                        const std::function<void(const std::string& what, double rate)>& done,
                        const std::function<void(const std::string& category, const std::string& what,
                                                 const std::string& reason)>& failed) {
  closed_ = true;
  for (auto& cat : categories_) {
    cat.companions.clear();  // their kernels are let go: no more spells
    // The fastest first; a failed candidate takes no place among the confirmed.
    std::stable_sort(cat.candidates.begin(), cat.candidates.end(), [](const Candidate& a, const Candidate& b) {
      return a.failed != b.failed ? b.failed : a.rate() > b.rate();
    });
    const auto confirmed = std::min(cat.candidates.size(), static_cast<std::size_t>(std::max(options_.confirmed, 0)));
    cat.candidates.erase(cat.candidates.begin() + static_cast<std::ptrdiff_t>(confirmed), cat.candidates.end());
    const StopRule rule = rule_for(cat.name);
    for (Candidate& c : cat.candidates) {
      if (raised(stop)) return;
      if (c.failed) continue;
      if (time(c, rule, true, stop)) {
        c.confirmed = true;
        if (done) done(c.what, c.rate());
      } else if (failed) {
        failed(cat.name, c.what, c.failure);
      }
    }
  }
}

std::size_t PeakWatch::to_confirm() const {
  std::size_t n = 0;
  for (const auto& cat : categories_) n += to_be_confirmed(cat).size();
  return n;
}

std::vector<const PeakWatch::Candidate*> PeakWatch::to_be_confirmed(const Category& cat) const {
  std::vector<const Candidate*> alive;
  for (const auto& c : cat.candidates)
    if (!c.failed) alive.push_back(&c);
  std::stable_sort(alive.begin(), alive.end(), [](const Candidate* a, const Candidate* b) { return a->rate() > b->rate(); });
  alive.resize(std::min(alive.size(), static_cast<std::size_t>(std::max(options_.confirmed, 0))));
  return alive;
}

double PeakWatch::confirm_time_s(const std::function<StopRule(const std::string& category)>& rule_for) const {
  double total = 0;
  if (closed_) return total;
  for (const auto& cat : categories_) {
    const StopRule rule = rule_for(cat.name);
    for (const Candidate* c : to_be_confirmed(cat)) total += expected_time_s(rule, c->typical_s);
  }
  return total;
}

std::size_t PeakWatch::candidates() const {
  std::size_t n = 0;
  for (const auto& cat : categories_) n += cat.candidates.size();
  return n;
}

bool PeakWatch::holds(const std::string& what) const {
  for (const auto& cat : categories_)
    for (const auto& c : cat.candidates)
      if (c.what == what) return true;
  return false;
}

nlohmann::json PeakWatch::report() const {
  nlohmann::json j = {{"share", options_.share}, {"bursts", bursts_}, {"burst_time_s", burst_time_s_},
                      {"extended_s", extended_s_},
                      {"categories", nlohmann::json::array()}, {"candidates", nlohmann::json::array()}};
  for (const auto& cat : categories_) {
    j["categories"].push_back({{"category", cat.name}, {"bursts", cat.bursts}, {"near_best", cat.near_best},
                               {"burst_time_s", cat.burst_time_s}, {"spells", cat.spells},
                               {"spell_time_s", cat.spell_time_s}, {"companion_rounds", cat.companion_rounds}});
    for (const auto& c : cat.candidates) {
      nlohmann::json e = {{"category", cat.name}, {"what", c.what}, {"samples", c.samples.size()},
                          {"bursts", c.bursts}, {"burst_time_s", c.burst_time_s}};
      if (c.confirmed) e["confirmed"] = true;
      if (c.failed) e["failed"] = c.failure;
      j["candidates"].push_back(std::move(e));
    }
    for (const auto& c : cat.companions) {
      nlohmann::json e = {{"category", cat.name}, {"what", c.what}, {"samples", c.samples.size()},
                          {"companion", true}};
      if (c.failed) e["failed"] = c.failure;
      j["candidates"].push_back(std::move(e));
    }
  }
  return j;
}

}  // namespace truepeak
