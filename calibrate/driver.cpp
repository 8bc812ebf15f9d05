#include "calibrate/driver.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <set>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "calibrate/backends.hpp"
#include "calibrate/datasheet.hpp"
#include "calibrate/fits.hpp"
#include "calibrate/machine.hpp"
#include "calibrate/peak_watch.hpp"
#include "calibrate/runner.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "truepeak/version.hpp"

namespace truepeak {
namespace {

using Clock = std::chrono::steady_clock;

Timing timing_of(const Summary& s) { return Timing{s.min_s, s.median_s, s.cv, s.samples, s.typical_s}; }

// A peak-watch candidate's figures written back to its GEMM or convolution point.
template <typename Point>
void set_figures(Point& p, double flops, const Summary& s, const std::string& impl, const std::string& layout) {
  p.timing = timing_of(s);
  p.flops_per_s = flops / s.min_s;
  p.impl = impl;
  p.layout = layout;
}

// A vector op's rate in progress lines: "3.41 Gelem/s".
std::string format_elements_per_s(double elements_per_s) {
  return fmt::format("{:.2f} Gelem/s", elements_per_s / 1e9);
}

// A convolution point's name for progress, the second look and the peak watch: the layout asked
// for, and the one that ran where they differ ("any" usually runs blocked, so "any->blocked" and
// "blocked" are two points).
std::string layout_label(ConvLayout requested, const std::string& ran) {
  const std::string asked(to_string(requested));
  return asked == ran ? ran : asked + "->" + ran;
}

// A measured point: its figures, and its kernel and samples for the peak watch.
struct Measured {
  Summary summary;
  double flops = 0;
  double bytes = 0;
  std::string impl;
  std::string layout;
  std::unique_ptr<Kernel> kernel;
  std::vector<double> samples;
  double best_flops_per_s() const { return flops / summary.min_s; }
  double best_Bps() const { return bytes / summary.min_s; }
  double median_Bps() const { return bytes / summary.median_s; }
};

// A short fixed kernel timed between points. A probe slower than the fastest of the recent probes
// x slowdown means others are using the machine right now: the point is worth measuring again.
// The window forgets: a host that stays slower for longer than `kWindow` probes is the machine as
// found, and measuring every point again would only spend time.
// One kernel timed between points. Its quiet reference is the fastest of its last kWindow
// probes (the baseline while there are fewer).
class SentinelProbe {
 public:
  SentinelProbe(std::unique_ptr<Kernel> kernel, StopRule rule, double slowdown)
      : kernel_(std::move(kernel)), rule_(rule), slowdown_(slowdown) {}

  void calibrate_baseline(const std::atomic<bool>* stop) {
    StopRule baseline_rule = rule_;
    baseline_rule.min_samples = std::max(rule_.min_samples, 10);
    baseline_rule.budget_s = std::max(rule_.budget_s * 4, 0.05);
    baseline_s_ = measure(*kernel_, baseline_rule, stop).summary.min_s;
  }

  // True when the machine is busier than it was a moment ago.
  bool slowed(const std::atomic<bool>* stop) {
    const double t = measure(*kernel_, rule_, stop).summary.min_s;
    double recent = probes_s_.size() < kWindow ? baseline_s_ : probes_s_.back();
    for (std::size_t i = probes_s_.size() > kWindow ? probes_s_.size() - kWindow : 0;
         i < probes_s_.size(); ++i)
      recent = std::min(recent, probes_s_[i]);
    probes_s_.push_back(t);
    baseline_s_ = std::min(baseline_s_, t);
    const bool slow = t > recent * slowdown_;
    slow_probes_ += slow ? 1 : 0;
    return slow;
  }

  // True when a probe now runs within the slowdown of the fastest ever seen. Not counted.
  bool quiet(const std::atomic<bool>* stop) { return within(slowdown_ - 1, stop); }

  // True when a probe now runs within `fraction` of the fastest ever seen. Not counted.
  bool within(double fraction, const std::atomic<bool>* stop) {
    const double t = measure(*kernel_, rule_, stop).summary.min_s;
    baseline_s_ = std::min(baseline_s_, t);
    return t <= baseline_s_ * (1 + fraction);
  }

  nlohmann::json report() const {
    nlohmann::json j = {{"kernel", kernel_->name()},
                        {"baseline_s", baseline_s_},
                        {"probes", probes_s_.size()},
                        {"slow_probes", slow_probes_}};
    if (!probes_s_.empty()) {
      const auto s = summarize(probes_s_);
      j["probe_min_s"] = s.min_s;
      j["probe_median_s"] = s.median_s;
      j["probe_max_s"] = s.max_s;
      j["probe_cv"] = s.cv;
    }
    return j;
  }

  static constexpr std::size_t kWindow = 16;

 private:
  std::unique_ptr<Kernel> kernel_;
  StopRule rule_;
  double slowdown_;
  double baseline_s_ = 0;
  std::vector<double> probes_s_;
  int slow_probes_ = 0;
};

// Interference detection: a compute probe (the backend's sentinel) and, where the plan asks for
// one, a memory probe (a triad beyond the caches' reach of one core), since other tenants'
// memory traffic slows large working sets while a compute kernel in cache runs as fast as ever.
// A round of probes is slow when any of them is.
class Sentinel {
 public:
  Sentinel(std::vector<std::unique_ptr<Kernel>> kernels, StopRule rule, double slowdown)
      : slowdown_(slowdown) {
    for (auto& k : kernels) probes_.emplace_back(std::move(k), rule, slowdown);
  }

  void calibrate_baseline(const std::atomic<bool>* stop) {
    for (auto& p : probes_) p.calibrate_baseline(stop);
  }

  bool slowed(const std::atomic<bool>* stop) {
    bool slow = false;
    for (auto& p : probes_) slow = p.slowed(stop) || slow;  // every probe runs, every round
    ++rounds_;
    slow_rounds_ += slow ? 1 : 0;
    return slow;
  }

  bool quiet(const std::atomic<bool>* stop) {
    bool quiet = true;
    for (auto& p : probes_) quiet = p.quiet(stop) && quiet;
    return quiet;
  }

  // True when the compute probe runs within `fraction` of its fastest: the machine computes as
  // fast as it did at its best (the memory probe aside).
  bool computes_at_best(double fraction, const std::atomic<bool>* stop) {
    return probes_.front().within(fraction, stop);
  }

  // The first probe's figures at the top level; every probe's under "kernels".
  nlohmann::json report(int remeasured) const {
    nlohmann::json j = probes_.front().report();
    j["slowdown_threshold"] = slowdown_;
    j["window_probes"] = SentinelProbe::kWindow;
    j["probes"] = rounds_;
    j["slow_probes"] = slow_rounds_;
    j["points_remeasured"] = remeasured;
    if (probes_.size() > 1) {
      j["kernels"] = nlohmann::json::array();
      for (const auto& p : probes_) j["kernels"].push_back(p.report());
    }
    return j;
  }

 private:
  std::vector<SentinelProbe> probes_;
  double slowdown_;
  int rounds_ = 0;
  int slow_rounds_ = 0;
};

// The peak watch's category of the main-memory triad points.
constexpr const char* kMemoryCategory = "stream triad main memory";

// Without bursts, the pool is what the end confirms.
PeakWatch::Options watch_options(const Plan& plan) {
  PeakWatch::Options o;
  o.confirmed = plan.confirm_peaks ? std::max(plan.confirm_gemms, 1) : 0;
  o.pool = plan.watch_share > 0 ? std::max(plan.watch_pool, o.confirmed) : o.confirmed;
  o.share = plan.watch_share;
  o.keep_kernels = plan.watch_keeps_kernels;
  o.burst_rule = plan.burst_rule;
  o.spell_s = plan.watch_spell_s;
  o.spell_budget_s = plan.watch_spell_budget_s;
  o.companion_every_s = plan.watch_companion_every_s;
  o.spell_categories = {kMemoryCategory};
  o.admit_within = plan.watch_admit_within;
  o.most = plan.watch_share > 0 ? std::max(plan.watch_most, o.pool) : o.pool;
  return o;
}

constexpr const char* kClockCategory = "clock";

// The working-set sweep in the order measured: every op at every size of `stream_bytes`, then the
// triad alone at the sizes of `triad_only_bytes` (when the plan has the triad).
std::vector<std::pair<StreamOp, std::int64_t>> sweep_points(const Plan& plan) {
  std::vector<std::pair<StreamOp, std::int64_t>> out;
  for (const auto bytes : plan.stream_bytes)
    for (const auto op : plan.stream_ops) out.emplace_back(op, bytes);
  if (std::find(plan.stream_ops.begin(), plan.stream_ops.end(), StreamOp::triad) != plan.stream_ops.end())
    for (const auto bytes : plan.triad_only_bytes) out.emplace_back(StreamOp::triad, bytes);
  return out;
}

class DeviceRun {
 public:
  DeviceRun(Backend& backend, const Plan& plan, const CalibrateOptions& options, Device& device, int position,
            int device_count)
      : backend_(backend), plan_(plan), options_(options), device_(device),
        tag_(device_count > 1 ? fmt::format("{} {}/{}", device.id, position, device_count) : device.id),
        watch_(watch_options(plan)) {
    // Every first measurement by group (the FMA and the two overheads aside).
    const auto expect = [this](const char* group, std::size_t points, const StopRule& rule) {
      pending_[group] = {int(points), 0, 0.0, rule.budget_s / 2};
    };
    expect("vector_op", plan.vector_ops.size(), plan.vector_op_rule);
    expect("gemm", plan.gemm.size() + plan.gemm_cold.size(), plan.gemm_rule);
    // The sweep in two groups, measured apart: main memory (long points), the caches (short ones).
    const auto sweep = sweep_points(plan);
    std::size_t in_memory = 0;
    const auto memory_from = device_memory_from(backend.describe().levels);
    for (const auto& [op, bytes] : sweep) in_memory += memory_from && bytes >= *memory_from;
    expect("memory", in_memory, plan.stream_rule);
    expect("caches", sweep.size() - in_memory + plan.device_copy_bytes.size(), plan.stream_rule);
    expect("conv", plan.conv.size() + plan.conv_cold.size(), plan.conv_rule);
    expect("transfer", plan.transfer_bytes.size() * 4 + (plan.bidirectional_bytes > 0 ? 1 : 0), plan.transfer_rule);
    total_points_ = int(plan.fma_dtypes.size()) + 2 + (plan.measure_clock ? 1 : 0);
    for (const auto& [group, p] : pending_) total_points_ += p.left;
    if (plan.revisit_max_s > 0)
      total_points_ += int(plan.gemm.size() + plan.gemm_cold.size() + plan.conv.size() + plan.conv_cold.size() +
                           plan.vector_ops.size());
    if (plan.confirm_peaks) {
      std::map<DType, int> gemms;
      for (const auto& g : plan.gemm) ++gemms[g.dtype];
      int confirmed = 0;
      for (const auto& [dtype, count] : gemms)
        confirmed += std::min(count, std::max(plan.confirm_gemms, 1));
      std::map<DType, int> convs;
      for (const auto& c : plan.conv) ++convs[c.first.dtype];
      for (const auto& [dtype, count] : convs)
        confirmed += std::min(count, std::max(plan.confirm_gemms, 1));
      // The main-memory triads are confirmed by the watch or after it; the other ops when the
      // plan says so.
      if (memory_from) {
        for (const auto& [op, bytes] : sweep) {
          confirmed += bytes >= *memory_from && (op == StreamOp::triad || plan.confirm_other_streams);
          confirmed += confirms_in_last_cache(to_string(op), bytes);
        }
      }
      total_points_ += int(plan.fma_dtypes.size()) + (plan.measure_clock ? 1 : 0) + confirmed;
    }
  }

  void run() {
    start_ = Clock::now();
    start_sentinel();
    measure_fma();
    measure_clock();
    measure_overhead();
    measure_vector_ops();
    // Main memory early: its triads, the headline that other tenants move the most, then stay
    // peak-watch candidates for nearly all the run. The in-cache points, a few microseconds each,
    // after the GEMMs: early in a run (threads cold) one of them measured half its usual rate.
    measure_memory(true);
    measure_gemm();
    measure_memory(false);
    measure_conv();
    measure_transfers();
    group_.clear();  // second looks and confirmations from here on
    revisit();
    confirm_peaks();
    finish();
  }

  bool interrupted() const { return stopped(); }

 private:
  bool stopped() const { return options_.stop && options_.stop->load(); }

  void say(const std::string& line) const {
    if (options_.progress) options_.progress(line);
  }

  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  // The rule a peak-watch category is confirmed with.
  StopRule confirm_rule(const std::string& category) const {
    if (category == kMemoryCategory) return plan_.stream_rule;
    if (category.rfind("fma", 0) == 0 || category == kClockCategory) return plan_.fma_rule;
    return category.rfind("conv", 0) == 0 ? plan_.conv_rule : plan_.gemm_rule;
  }

  // Seconds the optional work may still take and leave the first measurements still to come and
  // the confirmation time to end by the plan's deadline (Plan::deadline_s; without one, no limit).
  // On a busy host re-measures early in a run would otherwise take the time of the points after
  // them: a run with re-measures all through its GEMMs ended 15 s past its goal in its convolutions.
  double time_left_s() const {
    if (plan_.deadline_s <= 0) return std::numeric_limits<double>::infinity();
    return plan_.deadline_s - elapsed_s() - time_to_come_s() - confirmation_s();
  }

  // About how long the confirmation at the end takes.
  double confirmation_s() const {
    if (!plan_.confirm_peaks) return 0;
    double s = watch_.confirm_time_s([this](const std::string& category) { return confirm_rule(category); });
    if (const auto from = device_memory_from(backend_.describe().levels))
      for (const auto& p : device_.memory_sweep)
        if (confirms_after_watch(p, *from)) s += expected_time_s(plan_.stream_rule, p.bytes / p.median_Bps);
    return s;
  }

  // About how long the first measurements still to come take, with the peak watch's bursts
  // between them (Plan::watch_share of the time).
  double time_to_come_s() const {
    double s = 0;
    for (const auto& [group, p] : pending_) s += p.expected_s();
    return s / (1 - std::clamp(plan_.watch_share, 0.0, 0.5));
  }

  // `rule` for a first measurement, its time budget cut (to a quarter at most) where the points
  // still to come would otherwise end past the deadline: on a busy host every point runs to its
  // budget, and a run whose GEMMs took 78 s instead of about 50 ended 12 s past its goal. The
  // minimum count of samples stays.
  StopRule within_goal(StopRule rule) {
    if (plan_.deadline_s <= 0) return rule;
    const double room = plan_.deadline_s - elapsed_s() - confirmation_s();  // for this point and the rest
    const double need = time_to_come_s() + rule.budget_s / 2;
    if (need > 0 && room < need) {
      const double cut = std::clamp(room / need, 0.25, 1.0);
      rule.budget_s *= cut;
      rule.warmup_s *= cut;
      ++budgets_cut_;
    }
    return rule;
  }

  // Optional work left out to end by the deadline.
  struct LeftOut {
    int remeasures = 0;  // points the sentinel found busy that were not measured again
    int second_looks = 0;
    int last_looks = 0;
    double quiet_wait_s = 0;  // of the plan's wait
  };

  void progress(const std::string& what, const std::string& figure) {
    ++done_points_;
    say(fmt::format("[{} {:>3}/{} {:>5.1f}s] {:<44} {}", tag_, done_points_, total_points_, elapsed_s(), what,
                    figure));
  }

  void skip(const std::string& klass, const std::string& what, const std::string& given) {
    // Problems of one class that fail for the same reason are one entry with a count. A reason
    // that begins with the problem's name (a kernel's message: "gemm bf16_b1m64n64k64: ...") drops
    // it: the entry names the problem, and the rest is what the problems of a class share.
    const auto colon = given.find(": ");
    const bool named = colon != std::string::npos && what.rfind(given.substr(0, colon), 0) == 0;
    const std::string reason = named ? given.substr(colon + 2) : given;
    const auto key = klass + "\n" + reason;
    auto it = skipped_index_.find(key);
    if (it == skipped_index_.end()) {
      skipped_index_[key] = {device_.skipped.size(), 1};
      device_.skipped.push_back({what, reason});
      say(fmt::format("[{}] skipped {}: {}", tag_, what, reason));
    } else {
      auto& [index, count] = it->second;
      ++count;
      device_.skipped[index].what = fmt::format("{} ({} problems)", klass, count);
    }
    ++done_points_;
  }

  template <typename Make>
  // `remeasure`: measure again while the sentinel says the machine is busy (Plan::max_remeasure).
  std::optional<Measured> point(const std::string& klass, const std::string& what, const StopRule& rule, Make make,
                                bool remeasure = true) {
    if (stopped()) return std::nullopt;
    // Bursts first, while no kernel of this point is alive: the last point's is in the watch or gone.
    watch_.tick(elapsed_s(), options_.stop);
    const auto first = pending_.find(group_);
    if (first != pending_.end()) first->second.left = std::max(0, first->second.left - 1);
    const double began_s = elapsed_s();
    try {
      std::unique_ptr<Kernel> kernel = make();
      kernel->check();
      auto result = measure(*kernel, first != pending_.end() ? within_goal(rule) : rule, options_.stop);
      if (first != pending_.end()) {
        ++first->second.done;
        first->second.spent_s += elapsed_s() - began_s;
      }
      // Points measured while the machine was busy are measured again; the faster run counts,
      // since interference only ever adds time.
      for (int again = 0; remeasure && again < plan_.max_remeasure && sentinel_ && !stopped() &&
                          sentinel_->slowed(options_.stop);
           ++again) {
        if (time_left_s() < expected_time_s(rule, result.summary.typical_s)) {
          ++left_out_.remeasures;
          break;
        }
        ++remeasured_;
        auto retry = measure(*kernel, rule, options_.stop);
        const double typical = std::min(result.summary.typical_s, retry.summary.typical_s);
        if (retry.summary.min_s < result.summary.min_s) result = retry;
        result.summary.typical_s = typical;
      }
      Measured m{result.summary, kernel->flops(), kernel->bytes(), kernel->impl(), kernel->layout(), nullptr,
                 std::move(result.samples)};
      m.kernel = std::move(kernel);
      return m;
    } catch (const Unsupported& e) {
      skip(klass, what, e.what());
    } catch (const CheckFailed& e) {
      skip(klass, what, fmt::format("output check failed, time not trusted: {}", e.what()));
    } catch (const std::bad_alloc&) {
      skip(klass, what, "out of memory");
    } catch (const Error& e) {
      skip(klass, what, fmt::format("failed: {}", e.what()));
    }
    return std::nullopt;
  }

  void start_sentinel() {
    try {
      std::vector<std::unique_ptr<Kernel>> probes;
      probes.push_back(backend_.sentinel());
      if (plan_.memory_sentinel_bytes > 0)
        probes.push_back(backend_.stream(StreamOp::triad, plan_.memory_sentinel_bytes));
      for (auto& probe : probes) probe->check();
      sentinel_ = std::make_unique<Sentinel>(std::move(probes), plan_.sentinel_rule, plan_.sentinel_slowdown);
      sentinel_->calibrate_baseline(options_.stop);
    } catch (const Error& e) {
      sentinel_.reset();
      device_.skipped.push_back({"sentinel", fmt::format("interference detection off: {}", e.what())});
    } catch (const std::bad_alloc&) {
      sentinel_.reset();
      device_.skipped.push_back({"sentinel", "interference detection off: out of memory"});
    }
  }

  void measure_fma() {
    for (const auto dtype : plan_.fma_dtypes) {
      const auto name = std::string(to_string(dtype));
      const auto make = [this, dtype] { return backend_.fma(dtype); };
      if (auto m = point("fma " + name, "fma " + name, plan_.fma_rule, make)) {
        device_.peaks.vector_flops_per_s[name] = m->best_flops_per_s();
        progress("fma " + name, format_flops_per_s(m->best_flops_per_s()));
        const double flops = m->flops;
        watch_.offer("fma " + name, "fma " + name, flops, make, std::move(m->kernel), m->samples,
                     [this, name, flops](const Summary& s, const std::string&, const std::string&) {
                       auto& peak = device_.peaks.vector_flops_per_s[name];
                       peak = std::max(peak, flops / s.min_s);
                     });
      }
    }
  }

  // The clock, in MHz, into the device's properties (the fastest seen so far).
  void note_clock(double hz) {
    auto& mhz = device_.properties["measured_frequency_mhz"];
    if (!mhz.is_number() || mhz.get<double>() < hz / 1e6) mhz = hz / 1e6;
  }

  void measure_clock() {
    if (!plan_.measure_clock) return;
    const auto make = [this] { return backend_.clock(); };
    if (auto m = point("clock", "clock", plan_.fma_rule, make)) {
      note_clock(m->best_flops_per_s());
      progress("clock", format_clock(m->best_flops_per_s()));
      const double adds = m->flops;
      watch_.offer(kClockCategory, "clock", adds, make, std::move(m->kernel), m->samples,
                   [this, adds](const Summary& s, const std::string&, const std::string&) { note_clock(adds / s.min_s); });
    }
  }

  static std::string format_clock(double hz) { return fmt::format("{:.0f} MHz", hz / 1e6); }

  void measure_overhead() {
    if (auto m = point("overhead", "per-op overhead", plan_.overhead_rule, [&] { return backend_.tiny_op(); })) {
      device_.overhead_op_s = m->summary.min_s;
      progress("per-op overhead", format_time_s(m->summary.min_s));
    }
    if (auto m = point("graph overhead", "per-op overhead in a graph", plan_.overhead_rule,
                       [&] { return backend_.graph_tiny_op(); })) {
      device_.overhead_graph_op_s = m->summary.min_s;
      progress("per-op overhead in a graph", format_time_s(m->summary.min_s));
    }
  }

  void measure_vector_ops() {
    group_ = "vector_op";
    for (const auto& shape : plan_.vector_ops) {
      const auto what = "vector_op " + shape.str();
      // By dtype: the ops of a dtype the library cannot run here are one skipped entry per reason.
      const auto klass = fmt::format("vector_op {}", to_string(shape.dtype));
      const auto make = [this, shape = shape] { return backend_.vector_op(shape); };
      if (auto m = point(klass, what, plan_.vector_op_rule, make)) {
        const double rate = shape.elements() / m->summary.min_s;
        device_.vector_ops.push_back({shape.op, shape.dtype, shape.rows, shape.cols,
                                      timing_of(m->summary), rate, m->impl});
        progress(what, format_elements_per_s(rate));
        const std::size_t i = device_.vector_ops.size() - 1;
        keep_for_revisit(klass, what, make, Revisit::Kind::vector_op, i, *m, static_cast<double>(shape.elements()));
        // An op over main memory: timed again with main memory's fast spells.
        const auto from = device_memory_from(backend_.describe().levels);
        if (from && shape.bytes() >= static_cast<double>(*from) && holds_companion(shape.bytes())) {
          const double elements = shape.elements();
          watch_.accompany(kMemoryCategory, what, elements, std::move(m->kernel), m->samples,
                           [this, i, elements](const Summary& s, const std::string&, const std::string&) {
                             auto& p = device_.vector_ops[i];
                             if (elements / s.min_s > p.elements_per_s) {
                               // The typical time stays the lowest median of the point's looks.
                               const double typical = p.timing.typical_s;
                               p.elements_per_s = elements / s.min_s;
                               p.timing = timing_of(s);
                               if (typical > 0) p.timing.typical_s = std::min(typical, p.timing.typical_s);
                             }
                           }, m->summary.typical_s);
        }
      } else {
        no_revisit();
      }
    }
  }

  void measure_gemm() {
    group_ = "gemm";
    for (const auto& shape : plan_.gemm) {
      const auto what = "gemm " + shape.str();
      const auto klass = fmt::format("gemm {}", to_string(shape.dtype));
      const auto make = [this, shape] { return backend_.gemm(shape); };
      if (auto m = point(klass, what, plan_.gemm_rule, make)) {
        GemmPoint p{shape, timing_of(m->summary), m->best_flops_per_s(), m->impl, m->layout};
        const auto dtype = std::string(to_string(shape.dtype));
        auto& peak = device_.peaks.flops_per_s[dtype];
        peak = std::max(peak, p.flops_per_s);
        device_.gemm.push_back(std::move(p));
        progress(what, format_flops_per_s(m->best_flops_per_s()));
        const std::size_t i = device_.gemm.size() - 1;
        const double flops = m->flops;
        keep_for_revisit(klass, what, make, Revisit::Kind::gemm, i, *m);
        watch_.offer(klass, what, flops, make, std::move(m->kernel), m->samples,
                     [this, i, dtype, flops](const Summary& s, const std::string& impl, const std::string& layout) {
                       set_figures(device_.gemm[i], flops, s, impl, layout);
                       auto& best = device_.peaks.flops_per_s[dtype];
                       best = std::max(best, device_.gemm[i].flops_per_s);
                     }, m->summary.typical_s);
      } else {
        no_revisit();
      }
    }
    // Cold weights: their own points, never a peak.
    for (const auto& shape : plan_.gemm_cold) {
      const auto what = "gemm " + shape.str() + " cold weights";
      const auto klass = fmt::format("gemm {}", to_string(shape.dtype));
      const auto make = [this, shape] { return backend_.gemm_cold_weights(shape); };
      if (auto m = point(klass, what, plan_.gemm_rule, make)) {
        device_.gemm.push_back(
            {shape, timing_of(m->summary), m->best_flops_per_s(), m->impl, m->layout, true});
        progress(what, format_flops_per_s(m->best_flops_per_s()));
        keep_for_revisit(klass, what, make, Revisit::Kind::gemm, device_.gemm.size() - 1, *m);
      } else {
        no_revisit();
      }
    }
  }

  void measure_conv() {
    group_ = "conv";
    for (const auto& [shape, layout] : plan_.conv) {
      const auto what = "conv " + shape.str();
      const auto klass = fmt::format("conv {}", to_string(shape.dtype));
      const auto make = [this, shape = shape, layout = layout] { return backend_.conv(shape, layout); };
      if (auto m = point(klass, what, plan_.conv_rule, make)) {
        device_.conv.push_back({shape, m->layout, timing_of(m->summary), m->best_flops_per_s(), m->impl});
        const auto named = what + " " + layout_label(layout, m->layout);
        progress(named, format_flops_per_s(m->best_flops_per_s()));
        const std::size_t i = device_.conv.size() - 1;
        const double flops = m->flops;
        keep_for_revisit(klass, named, make, Revisit::Kind::conv, i, *m);
        watch_.offer(klass, named, flops, make, std::move(m->kernel), m->samples,
                     [this, i, flops](const Summary& s, const std::string& impl, const std::string& ran_layout) {
                       set_figures(device_.conv[i], flops, s, impl, ran_layout);
                     }, m->summary.typical_s);
      } else {
        no_revisit();
      }
    }
    // Cold weights: their own points, never a peak.
    for (const auto& [shape, layout] : plan_.conv_cold) {
      const auto what = "conv " + shape.str() + " cold weights";
      const auto klass = fmt::format("conv {}", to_string(shape.dtype));
      const auto make = [this, shape = shape, layout = layout] {
        return backend_.conv_cold_weights(shape, layout);
      };
      if (auto m = point(klass, what, plan_.conv_rule, make)) {
        device_.conv.push_back(
            {shape, m->layout, timing_of(m->summary), m->best_flops_per_s(), m->impl, true});
        const auto named = what + " " + layout_label(layout, m->layout);
        progress(named, format_flops_per_s(m->best_flops_per_s()));
        keep_for_revisit(klass, named, make, Revisit::Kind::conv, device_.conv.size() - 1, *m);
      } else {
        no_revisit();
      }
    }
  }

  // The sweep's points in main memory (`main_memory`), or the others and the device copies.
  void measure_memory(bool main_memory) {
    group_ = main_memory ? "memory" : "caches";
    const auto from = device_memory_from(backend_.describe().levels);
    for (const auto& point_at : sweep_points(plan_)) {
      const StreamOp op = point_at.first;
      const std::int64_t bytes = point_at.second;
      if (main_memory != (from && bytes >= *from)) continue;
      const auto what = fmt::format("stream {} {}", to_string(op), format_bytes(double(bytes)));
      const auto make = [this, op, bytes] { return backend_.stream(op, bytes); };
      if (auto m = point(fmt::format("stream {}", to_string(op)), what, plan_.stream_rule, make)) {
        device_.memory_sweep.push_back({std::string(to_string(op)), bytes, m->best_Bps(), m->median_Bps()});
        progress(what, format_Bps(m->best_Bps()));
        const bool in_main_memory = from && bytes >= *from;
        // Main memory's other ops: timed again with its fast spells.
        if (op != StreamOp::triad && in_main_memory && holds_companion(static_cast<double>(bytes))) {
          const std::size_t i = device_.memory_sweep.size() - 1;
          const double moved = m->bytes;
          watch_.accompany(kMemoryCategory, what, moved, std::move(m->kernel), m->samples,
                           [this, i, moved](const Summary& s, const std::string&, const std::string&) {
                             MemoryPoint& p = device_.memory_sweep[i];
                             if (moved / s.min_s > p.Bps) {
                               p.Bps = moved / s.min_s;
                               p.median_Bps = moved / s.median_s;
                               set_memory_levels();
                             }
                           });
        }
        // The main-memory triad is the headline bandwidth: the watch's to burst and confirm where
        // there are bursts; else every size is confirmed below, as the other ops are.
        if (op != StreamOp::triad || !in_main_memory || plan_.watch_share <= 0) continue;
        const std::size_t i = device_.memory_sweep.size() - 1;
        const double moved = m->bytes;
        watch_.offer(kMemoryCategory, what, moved, make, std::move(m->kernel), m->samples,
                     [this, i, moved](const Summary& s, const std::string&, const std::string&) {
                       MemoryPoint& p = device_.memory_sweep[i];
                       p.Bps = moved / s.min_s;
                       p.median_Bps = moved / s.median_s;
                       set_memory_levels();
                     });
      }
    }
    if (!main_memory) {
      for (const auto bytes : plan_.device_copy_bytes) {
        const auto what = fmt::format("device copy {}", format_bytes(double(bytes)));
        if (auto m = point("device copy", what, plan_.stream_rule, [&] { return backend_.device_copy(bytes); })) {
          device_.memory_sweep.push_back({"d2d_copy", bytes, m->best_Bps(), m->median_Bps()});
          progress(what, format_Bps(m->best_Bps()));
        }
      }
    }
    set_memory_levels();
  }

  // Whether the peak watch may keep one more main-memory kernel of `bytes` for the spells: the
  // plan has spells and kept kernels, and the companions' working sets stay within an eighth of
  // the machine's memory.
  bool holds_companion(double bytes) {
    if (plan_.watch_spell_s <= 0 || !plan_.watch_keeps_kernels || plan_.watch_share <= 0) return false;
    const auto memory = backend_.describe().memory_bytes;
    if (!memory || companion_bytes_ + bytes > static_cast<double>(*memory) / 8) return false;
    companion_bytes_ += bytes;
    return true;
  }

  void set_memory_levels() {
    device_.memory_levels = level_bandwidths(backend_.describe().levels, device_.memory_sweep, "triad");
    // What in-place ops (an activation over the tensor it reads) get, level by level.
    device_.memory_in_place_levels =
        level_bandwidths(backend_.describe().levels, device_.memory_sweep, std::string(to_string(StreamOp::update)));
    const auto& levels = backend_.describe().levels;
    if (!device_.memory_levels.empty() && !levels.empty() && device_.memory_levels.back().name == levels.back().name) {
      device_.peaks.memory_Bps = device_.memory_levels.back().Bps;
    }
  }

  void measure_transfers() {
    group_ = "transfer";
    for (const auto dir : {TransferDir::h2d, TransferDir::d2h}) {
      for (const bool pinned : {true, false}) {
        const auto key = fmt::format("{}_{}", to_string(dir), pinned ? "pinned" : "pageable");
        TransferFit fit;
        for (const auto bytes : plan_.transfer_bytes) {
          const auto what = fmt::format("transfer {} {}", key, format_bytes(double(bytes)));
          if (auto m = point("transfer " + key, what, plan_.transfer_rule,
                             [&] { return backend_.transfer(dir, pinned, bytes); })) {
            fit.points.push_back({bytes, m->summary.min_s});
            progress(what, format_Bps(m->best_Bps()));
          }
        }
        if (fit.points.empty()) continue;
        if (const auto lb = fit_latency_bandwidth(fit.points)) {
          fit.latency_s = lb->latency_s;
          fit.Bps = lb->Bps;
        }
        device_.transfers[key] = std::move(fit);
      }
    }
    if (plan_.bidirectional_bytes > 0) {
      const auto what = fmt::format("transfer bidirectional {}", format_bytes(double(plan_.bidirectional_bytes)));
      if (auto m = point("transfer bidirectional", what, plan_.transfer_rule,
                         [&] { return backend_.transfer_bidirectional(plan_.bidirectional_bytes); })) {
        device_.bidirectional_Bps = m->best_Bps();
        progress(what, format_Bps(m->best_Bps()));
      }
    }
  }

  // A GEMM or convolution point to look at again (Plan::revisit_max_s): how to make its kernel,
  // where its figures are, and the samples of its first look.
  struct Revisit {
    enum class Kind { gemm, conv, vector_op };
    std::string klass, what;
    PeakWatch::Make make;
    Kind kind = Kind::gemm;
    std::size_t index = 0;
    double work = 0;  // FLOPs (GEMM, convolution) or elements (vector op) of one run
    std::vector<double> samples;
    bool second_look = false;  // it had its second look
  };

  // `work`: of one run, when it is not the kernel's FLOPs (a vector op's elements).
  void keep_for_revisit(const std::string& klass, const std::string& what, PeakWatch::Make make,
                        Revisit::Kind kind, std::size_t index, const Measured& m, double work = -1) {
    Revisit r{klass, what, std::move(make), kind, index, work >= 0 ? work : m.flops, m.samples};
    if (plan_.revisit_max_s > 0 && m.summary.min_s <= plan_.revisit_max_s) {
      revisits_.push_back(std::move(r));
      return;
    }
    no_revisit();
    if (kind == Revisit::Kind::conv && m.summary.min_s <= plan_.last_look_max_s)
      final_candidates_.push_back(std::move(r));
  }

  // A point with no second look (failed, or too long): its share of the progress total is done.
  void no_revisit() {
    if (plan_.revisit_max_s > 0) ++done_points_;
  }

  // Interference comes and goes over seconds to minutes: a point measured once may have been
  // measured in a busy spell. Each point kept for it is measured once more, minutes after its
  // first look; when the second look finds a faster sample, the point's figures become those of
  // both looks' samples together (the fastest is its capability figure). Peak-watch candidates
  // are skipped: their bursts and confirmation are many more looks.
  void revisit() {
    for (auto& r : revisits_) {
      if (stopped()) break;
      if (watch_.holds(r.what)) {
        ++done_points_;
        continue;
      }
      if (!fits(r)) {
        ++left_out_.second_looks;
        ++done_points_;
        continue;
      }
      r.second_look = look_again(r, "revisit ");
    }
    // The convolutions keep theirs for a last look at the best layers, the products of few rows
    // that had their second look for a last look of their own.
    for (auto& r : revisits_) {
      if (r.kind == Revisit::Kind::conv)
        final_candidates_.push_back(std::move(r));
      else if (r.kind == Revisit::Kind::gemm && r.second_look &&
               device_.gemm[r.index].shape.m <= plan_.last_look_gemm_rows)
        gemm_last_looks_.push_back(std::move(r));
    }
    revisits_.clear();
  }

  // Whether one more look at `r` fits in the time left.
  bool fits(const Revisit& r) const { return time_left_s() >= look_time_s(r); }

  // About how long one more look at `r` takes.
  double look_time_s(const Revisit& r) const {
    return expected_time_s(plan_.revisit_rule, median(r.samples));
  }

  // A last look at `r` where it fits (one more draw: no sentinel re-measures), else counted as
  // left out for the deadline. 1 when it was measured.
  int last_look(Revisit& r) {
    if (!fits(r)) {
      ++left_out_.last_looks;
      ++done_points_;
      return 0;
    }
    return look_again(r, "last look ", false);
  }

  // Measures a revisit point once more (`label` names the look in progress lines); its figures
  // become those of all its looks' samples when this look found a faster sample.
  // `remeasure`: as point()'s. False when the point could not be measured.
  bool look_again(Revisit& r, const std::string& label, bool remeasure = true) {
    auto m = point(r.klass, label + r.what, plan_.revisit_rule, r.make, remeasure);
    if (!m) return false;
    r.samples.insert(r.samples.end(), m->samples.begin(), m->samples.end());
    Summary all = summarize(r.samples);
    // The point's figures may already hold more than its first look (bursts, while it was a
    // candidate): they change only when the second look found a faster sample. Its typical
    // time is the lower of the looks' medians either way.
    const auto typical = [&](const Timing& t) {
      return t.typical_s > 0 ? std::min(t.typical_s, m->summary.typical_s) : m->summary.typical_s;
    };
    const auto update = [&](auto& p) {
      all.typical_s = typical(p.timing);
      if (all.min_s < p.timing.time_s) set_figures(p, r.work, all, m->impl, m->layout);
      p.timing.typical_s = all.typical_s;
      return p.flops_per_s;
    };
    switch (r.kind) {
      case Revisit::Kind::gemm: {
        auto& p = device_.gemm[r.index];
        const double rate = update(p);
        if (!p.cold_weights) {
          auto& best = device_.peaks.flops_per_s[std::string(to_string(p.shape.dtype))];
          best = std::max(best, p.flops_per_s);
        }
        progress(label + r.what, format_flops_per_s(rate));
        break;
      }
      case Revisit::Kind::conv:
        progress(label + r.what, format_flops_per_s(update(device_.conv[r.index])));
        break;
      case Revisit::Kind::vector_op: {
        auto& p = device_.vector_ops[r.index];
        all.typical_s = typical(p.timing);
        if (all.min_s < p.timing.time_s) {
          p.timing = timing_of(all);
          p.elements_per_s = r.work / all.min_s;
          p.impl = m->impl;
        }
        p.timing.typical_s = all.typical_s;
        progress(label + r.what, format_elements_per_s(p.elements_per_s));
        break;
      }
    }
    return true;
  }

  // The convolution points the last look measures: those within the plan's margin of their
  // dtype's best, fastest first, up to the plan's count per dtype (Plan::final_look_within), then
  // those far behind a twin in another layout (Plan::twin_look_gap).
  std::vector<Revisit*> final_look_points() {
    std::vector<Revisit*> out = near_best_points();
    const auto twins = behind_twin_points(out);
    out.insert(out.end(), twins.begin(), twins.end());
    return out;
  }

  // Last-look candidates of each dtype, each with its rank (lowest first).
  using RankedByDtype = std::map<DType, std::vector<std::pair<double, Revisit*>>>;

  std::vector<Revisit*> near_best_points() {
    if (plan_.final_look_within <= 0 || plan_.final_looks <= 0) return {};
    std::map<DType, double> best;
    for (const auto& c : device_.conv)
      if (!c.cold_weights) best[c.shape.dtype] = std::max(best[c.shape.dtype], c.flops_per_s);
    RankedByDtype by_dtype;  // fastest first
    for (auto& r : final_candidates_) {
      const auto& c = device_.conv[r.index];
      if (!c.cold_weights && !watch_.holds(r.what) &&
          c.flops_per_s >= (1 - plan_.final_look_within) * best[c.shape.dtype])
        by_dtype[c.shape.dtype].emplace_back(-c.flops_per_s, &r);
    }
    return first_of_each_dtype(by_dtype);
  }

  // The convolution points (not among `taken`) slower than their fastest twin by more than the
  // plan's gap, the widest first, up to the plan's count per dtype. A twin is any other warm point
  // of the same layer: another layout, or the same one reached another way (oneDNN's own choice
  // may run blocked).
  std::vector<Revisit*> behind_twin_points(const std::vector<Revisit*>& taken) {
    if (plan_.twin_look_gap <= 0 || plan_.final_looks <= 0) return {};
    const auto counts = [](const ConvPoint& c) { return !c.cold_weights && c.layout != "nchw" && c.flops_per_s > 0; };
    RankedByDtype by_dtype;  // (rate / twin's, point)
    for (auto& r : final_candidates_) {
      const auto& c = device_.conv[r.index];
      if (!counts(c) || watch_.holds(r.what) || std::find(taken.begin(), taken.end(), &r) != taken.end())
        continue;
      double twin = 0;
      for (const auto& other : device_.conv)
        if (counts(other) && other.shape == c.shape && &other != &c)
          twin = std::max(twin, other.flops_per_s);
      if (twin > 0 && c.flops_per_s < (1 - plan_.twin_look_gap) * twin)
        by_dtype[c.shape.dtype].emplace_back(c.flops_per_s / twin, &r);
    }
    return first_of_each_dtype(by_dtype);
  }

  // The plan's count of last looks per dtype, lowest rank first (ties in the candidates' order).
  std::vector<Revisit*> first_of_each_dtype(RankedByDtype& by_dtype) const {
    std::vector<Revisit*> out;
    for (auto& [dtype, points] : by_dtype) {
      std::stable_sort(points.begin(), points.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      if (points.size() > static_cast<std::size_t>(plan_.final_looks)) points.resize(plan_.final_looks);
      for (const auto& p : points) out.push_back(p.second);
    }
    return out;
  }

  // Interference on a shared host comes and goes over minutes (other tenants' memory traffic is
  // invisible to a compute sentinel), and it only ever adds time. So the points behind the
  // headline peaks are measured once more at the end, every sample counting: the capability
  // figure is the fastest seen over the whole calibration (the peak watch's bursts included).
  // Waits, up to the plan's budget, until the sentinel is as fast as it has ever been, so that
  // the headline points are measured again in a quiet spell if one comes.
  void wait_for_quiet() {
    if (!sentinel_ || plan_.quiet_wait_s <= 0) return;
    const double budget = std::clamp(time_left_s(), 0.0, plan_.quiet_wait_s);
    const auto start = Clock::now();
    double waited = 0;
    bool quiet = false;
    while (!stopped() && !(quiet = sentinel_->quiet(options_.stop)) && waited < budget) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      waited = std::chrono::duration<double>(Clock::now() - start).count();
    }
    // What the deadline took from a wait that ran out without finding a quiet machine.
    if (!quiet && !stopped()) left_out_.quiet_wait_s = plan_.quiet_wait_s - budget;
    device_.conditions["quiet_wait_s"] = waited;
    if (waited > 0)
      say(fmt::format("[{}] waited {:.1f} s for a quiet machine before confirming the peaks", tag_,
                      waited));
  }

  // A main-memory sweep point measured again after the watch's confirmation, or a triad point of
  // the last-level cache where the plan says so.
  bool confirms_after_watch(const MemoryPoint& p, std::int64_t device_memory_from) const {
    if (confirms_in_last_cache(p.kernel, p.bytes)) return true;
    if (p.bytes < device_memory_from || p.kernel == "d2d_copy" || !stream_op_named(p.kernel)) return false;
    // With bursts, the main-memory triad points were the watch's to confirm.
    if (p.kernel == "triad") return plan_.watch_share <= 0;
    return plan_.confirm_other_streams;
  }

  // The time the deadline leaves after the confirmation: more bursts, most of them for the
  // categories that the bursts so far have not settled (main memory while other tenants load it),
  // so that the fastest samples are drawn over the whole goal, not over the half a fast machine
  // needs for its points.
  void watch_to_deadline() {
    if (!plan_.closing_watch || plan_.watch_share <= 0 || plan_.deadline_s <= 0) return;
    // Room is left for the wait for a quiet machine, and a margin for the confirmation taking
    // longer than expected on a busy host.
    const double room =
        0.85 * (time_left_s() - plan_.quiet_wait_s - gemm_last_looks_s() - gemm_last_look_wait_s()) - 2.0;
    if (room < 1.0) return;
    constexpr double kChunkS = 10;  // a progress line this often
    double spent = 0;
    while (spent < room && !stopped()) {
      const double want = std::min(kChunkS, room - spent);
      const double chunk = watch_.extend(want, plan_.closing_watch_min_claim, options_.stop);
      spent += chunk;
      if (chunk < want) break;  // every category settled, or the run was stopped
      say(fmt::format("[{} {:>5.1f}s] more bursts of the headline points: {:.0f} of {:.0f} s", tag_,
                      elapsed_s(), spent, room));
    }
    device_.conditions["closing_watch_s"] = spent;
  }

  // The time the GEMMs' last looks are expected to take.
  double gemm_last_looks_s() const {
    double s = 0;
    for (const auto& r : gemm_last_looks_) s += look_time_s(r);
    return s;
  }

  // The wait the GEMMs' last looks may take (Plan::gemm_last_look_wait_s).
  double gemm_last_look_wait_s() const {
    return sentinel_ && !gemm_last_looks_.empty() && plan_.gemm_last_look_within > 0
               ? plan_.gemm_last_look_wait_s
               : 0.0;
  }

  // One more draw for each product of few rows (Plan::last_look_gemm_rows), while it fits, each
  // once the sentinel computes as fast as it ever did (or the wait's budget is spent).
  int gemm_last_looks() {
    int looked = 0;
    const double budget = gemm_last_look_wait_s();
    double waited = 0;
    for (auto& r : gemm_last_looks_) {
      if (stopped()) break;
      // The wait leaves the look its time: it ends while the look still fits, with a margin for
      // one more probe and pause.
      const double before = waited;
      const auto start = Clock::now();
      while (waited < budget && !stopped() && time_left_s() >= look_time_s(r) + 0.5 &&
             !sentinel_->computes_at_best(plan_.gemm_last_look_within, options_.stop)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        waited = before + std::chrono::duration<double>(Clock::now() - start).count();
      }
      looked += last_look(r);
    }
    gemm_last_looks_.clear();
    if (budget > 0) {
      device_.conditions["gemm_last_look_wait_s"] = waited;
      if (waited > 0)
        say(fmt::format("[{}] waited {:.1f} s for the sentinel at its fastest before the GEMMs' last looks",
                        tag_, waited));
    }
    return looked;
  }

  void confirm_peaks() {
    if (!plan_.confirm_peaks) return;
    watch_to_deadline();
    wait_for_quiet();
    // The progress total counted every point the plan could confirm; now the candidates are known
    // (a dtype whose points all failed has none).
    const auto from = device_memory_from(backend_.describe().levels);
    int after_watch = 0;
    if (from)
      for (const auto& p : device_.memory_sweep) after_watch += confirms_after_watch(p, *from);
    // The last look's points are chosen after the confirmation; at most the plan's count per dtype.
    std::set<DType> conv_dtypes;
    for (const auto& r : final_candidates_) conv_dtypes.insert(device_.conv[r.index].shape.dtype);
    const int final_rules = (plan_.final_look_within > 0) + (plan_.twin_look_gap > 0);
    const int final_most = plan_.final_looks * final_rules * static_cast<int>(conv_dtypes.size());
    total_points_ = done_points_ + static_cast<int>(watch_.to_confirm()) + after_watch + final_most +
                    static_cast<int>(gemm_last_looks_.size());
    // FMA, the few fastest GEMMs and convolutions of each dtype (which shape is fastest is itself
    // a noisy verdict, and the best layer is a headline figure too) and the main-memory triads.
    watch_.confirm([this](const std::string& category) { return confirm_rule(category); }, options_.stop,
        [this](const std::string& what, double rate) {
          progress("confirm " + what, what == "clock"                   ? format_clock(rate)
                                      : what.rfind("stream", 0) == 0 ? format_Bps(rate)
                                                                     : format_flops_per_s(rate));
        },
        [this](const std::string& category, const std::string& what, const std::string& reason) {
          skip(category, "confirm " + what, reason);
        });
    const auto last = final_look_points();
    total_points_ -= final_most - static_cast<int>(last.size());
    int looked = 0;
    for (Revisit* r : last) {
      if (stopped()) break;
      looked += last_look(*r);
    }
    looked += gemm_last_looks();
    device_.conditions["last_looks"] = looked;
    if (!from) return;
    bool changed = false;
    for (auto& p : device_.memory_sweep) {
      if (!confirms_after_watch(p, *from)) continue;
      const auto op = stream_op_named(p.kernel);
      const auto what = fmt::format("confirm stream {} {}", p.kernel, format_bytes(double(p.bytes)));
      if (auto m = point("stream " + p.kernel, what, plan_.stream_rule, [&] { return backend_.stream(*op, p.bytes); })) {
        if (m->best_Bps() > p.Bps) {
          p.Bps = m->best_Bps();
          p.median_Bps = m->median_Bps();
          changed = true;
        }
        progress(what, format_Bps(p.Bps));
      }
    }
    if (changed) set_memory_levels();
  }

  // A triad point the plan measures again at the end: its working set past the cache below the
  // last level and within the last one (the levels end with device memory), where the share of a
  // shared cache that this machine gets shows.
  bool confirms_in_last_cache(std::string_view kernel, std::int64_t bytes) const {
    const auto& levels = backend_.describe().levels;
    if (kernel != "triad" || !plan_.confirm_last_cache_triads || levels.size() < 2 ||
        !levels[levels.size() - 2].bytes)
      return false;
    const std::int64_t below =
        levels.size() >= 3 && levels[levels.size() - 3].bytes ? *levels[levels.size() - 3].bytes : 0;
    return bytes > below && bytes <= *levels[levels.size() - 2].bytes;
  }

  // Working sets from 4x the last cache's capacity measure device memory (as level_bandwidths).
  static std::optional<std::int64_t> device_memory_from(const std::vector<MemoryLevel>& levels) {
    if (levels.size() < 2 || !levels[levels.size() - 2].bytes) return std::nullopt;
    return 4 * *levels[levels.size() - 2].bytes;
  }

  static std::optional<StreamOp> stream_op_named(const std::string& name) {
    for (const auto op : {StreamOp::copy, StreamOp::scale, StreamOp::add, StreamOp::triad, StreamOp::update}) {
      if (to_string(op) == name) return op;
    }
    return std::nullopt;
  }

  void finish() {
    // Main memory was measured first; the profile lists the sweep by working set (the watch,
    // which wrote to its points by index, is closed).
    std::stable_sort(device_.memory_sweep.begin(), device_.memory_sweep.end(),
                     [](const MemoryPoint& a, const MemoryPoint& b) { return a.bytes < b.bytes; });
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    device_.conditions["elapsed_s"] = elapsed;
    device_.conditions["suite"] = options_.suite == Suite::quick ? "quick" : "full";
    device_.conditions["interrupted"] = stopped();
    if (plan_.deadline_s > 0) {
      device_.conditions["deadline_s"] = plan_.deadline_s;
      device_.conditions["left_out_for_deadline"] = {{"remeasures", left_out_.remeasures},
                                                     {"second_looks", left_out_.second_looks},
                                                     {"last_looks", left_out_.last_looks},
                                                     {"quiet_wait_s", left_out_.quiet_wait_s},
                                                     {"budgets_cut", budgets_cut_}};
    }
    if (sentinel_) device_.conditions["sentinel"] = sentinel_->report(remeasured_);
    if (plan_.watch_share > 0) device_.conditions["peak_watch"] = watch_.report();
  }

  Backend& backend_;
  const Plan& plan_;
  const CalibrateOptions& options_;
  Device& device_;
  std::string tag_;
  std::unique_ptr<Sentinel> sentinel_;
  PeakWatch watch_;
  std::map<std::string, std::pair<std::size_t, int>> skipped_index_;
  Clock::time_point start_;
  int total_points_ = 0;
  int done_points_ = 0;
  // First measurements still to come, by group of points (vector_op, gemm, memory, caches, conv,
  // transfer): the time optional work leaves them. Until three of a group are measured a point
  // counts half its rule's budget, then the group's mean so far.
  struct Pending {
    int left = 0;
    int done = 0;
    double spent_s = 0;
    double prior_s = 0;
    double expected_s() const { return left * (done >= 3 ? spent_s / done : prior_s); }
  };
  std::map<std::string, Pending> pending_;
  std::string group_;  // the group point() is measuring for the first time ("": none)
  int budgets_cut_ = 0;  // first measurements whose time budget gave way to the deadline
  int remeasured_ = 0;
  LeftOut left_out_;
  std::vector<Revisit> revisits_;
  double companion_bytes_ = 0;  // the working sets of the kernels kept for main memory's spells
  std::vector<Revisit> final_candidates_;  // the convolutions' second looks, for the last look
  std::vector<Revisit> gemm_last_looks_;   // the products of few rows, for a last look
};

}  // namespace

bool calibrate_device(Backend& backend, const Plan& plan, const CalibrateOptions& options, Device& device,
                      int position, int device_count) {
  DeviceRun run(backend, plan, options, device, position, device_count);
  run.run();
  return !run.interrupted();
}

Profile run_calibration(const CalibrateOptions& options) {
  Profile profile;
  profile.tool.version = TRUEPEAK_VERSION;
  profile.tool.git_sha = TRUEPEAK_GIT_SHA;
  profile.tool.argv = options.argv;
  profile.created_utc = utc_now_iso8601();
  profile.machine = read_machine(options.label);
  profile.machine.price_per_hour_usd = options.price_per_hour_usd;

  bool interrupted = false;
  int position = 0;
  for (const auto& id : options.device_ids) {
    ++position;
    if (options.stop && options.stop->load()) {
      interrupted = true;
      break;
    }
    auto backend = make_backend(id, options.threads);
    const auto& desc = backend->describe();
    Device device;
    device.id = desc.id;
    device.kind = desc.kind;
    device.name = desc.name;
    device.libraries = desc.libraries;
    device.properties = desc.properties;
    device.memory_bytes = desc.memory_bytes;
    const auto datasheet_of = [](const DeviceDescription& d) {
      return d.kind == "gpu" ? gpu_datasheet(d) : cpu_datasheet(d);
    };
    device.datasheet = datasheet_of(desc);
    const Plan plan = desc.kind == "gpu" ? gpu_plan(desc, options.suite) : cpu_plan(desc, options.suite);
    if (options.progress) options.progress(fmt::format("[{}] calibrating {} ({})", desc.id, desc.name, desc.kind));
    interrupted = !calibrate_device(*backend, plan, options, device, position, int(options.device_ids.size())) ||
                  interrupted;
    // Properties the run measured (the fastest clock it saw) enter the derived peaks.
    if (device.properties != desc.properties) {
      DeviceDescription seen = desc;
      seen.properties = device.properties;
      device.datasheet = datasheet_of(seen);
    }
    profile.devices.push_back(std::move(device));
  }
  profile.complete = !interrupted;
  return profile;
}

}  // namespace truepeak
