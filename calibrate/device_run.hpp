// One device's calibration run (DeviceRun), shared by the files that implement its parts.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <new>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "calibrate/driver.hpp"
#include "calibrate/peak_watch.hpp"
#include "calibrate/runner.hpp"
#include "calibrate/sentinel.hpp"
#include "core/error.hpp"

namespace truepeak::driver_detail {

using Clock = std::chrono::steady_clock;

inline Timing timing_of(const Summary& s) { return Timing{s.min_s, s.median_s, s.cv, s.samples, s.typical_s}; }

// A peak-watch candidate's figures written back to its GEMM or convolution point.
template <typename Point>
void set_figures(Point& p, double flops, const Summary& s, const std::string& impl, const std::string& layout) {
  p.timing = timing_of(s);
  p.flops_per_s = flops / s.min_s;
  p.impl = impl;
  p.layout = layout;
}

// A vector op's rate in progress lines: "3.41 Gelem/s".
std::string format_elements_per_s(double elements_per_s);

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

// The peak watch's category of the main-memory triad points.
inline constexpr const char* kMemoryCategory = "stream triad main memory";

inline constexpr const char* kClockCategory = "clock";

// The working-set sweep in the order measured: every op at every size of `stream_bytes`, then the
// triad alone at the sizes of `triad_only_bytes` (when the plan has the triad).
std::vector<std::pair<StreamOp, std::int64_t>> sweep_points(const Plan& plan);

class DeviceRun {
 public:
  DeviceRun(Backend& backend, const Plan& plan, const CalibrateOptions& options, Device& device, int position,
            int device_count);

  void run();

  bool interrupted() const { return stopped(); }

 private:
  // Optional work left out to end by the deadline.
  struct LeftOut {
    int remeasures = 0;  // points the sentinel found busy that were not measured again
    int second_looks = 0;
    int last_looks = 0;
    double quiet_wait_s = 0;  // of the plan's wait
  };

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

  // Last-look candidates of each dtype, each with its rank (lowest first).
  using RankedByDtype = std::map<DType, std::vector<std::pair<double, Revisit*>>>;

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

  // The run's state, time budget, progress and points (driver.cpp).
  bool stopped() const { return options_.stop && options_.stop->load(); }
  void say(const std::string& line) const {
    if (options_.progress) options_.progress(line);
  }
  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  StopRule confirm_rule(const std::string& category) const;
  double time_left_s() const;
  double confirmation_s() const;
  double time_to_come_s() const;
  StopRule within_goal(StopRule rule);
  void progress(const std::string& what, const std::string& figure);
  void skip(const std::string& klass, const std::string& what, const std::string& given);
  template <typename Make>
  std::optional<Measured> point(const std::string& klass, const std::string& what, const StopRule& rule, Make make,
                                bool remeasure = true);
  void start_sentinel();
  static std::optional<std::int64_t> device_memory_from(const std::vector<MemoryLevel>& levels);
  static std::optional<StreamOp> stream_op_named(const std::string& name);
  void finish();

  // The first measurements (device_run_steps.cpp).
  void measure_fma();
  void note_clock(double hz);
  void measure_clock();
  static std::string format_clock(double hz);
  void measure_overhead();
  void measure_vector_ops();
  void measure_gemm();
  void measure_conv();
  void measure_memory(bool main_memory);
  bool holds_companion(double bytes);
  void set_memory_levels();
  void measure_transfers();

  // The later looks, the waits for a quiet machine and the confirmation (device_run_looks.cpp).
  void keep_for_revisit(const std::string& klass, const std::string& what, PeakWatch::Make make, Revisit::Kind kind,
                        std::size_t index, const Measured& m, double work = -1);
  void no_revisit();
  void revisit();
  bool fits(const Revisit& r) const;
  double look_time_s(const Revisit& r) const;
  int last_look(Revisit& r);
  bool look_again(Revisit& r, const std::string& label, bool remeasure = true);
  std::vector<Revisit*> final_look_points();
  std::vector<Revisit*> near_best_points();
  std::vector<Revisit*> behind_twin_points(const std::vector<Revisit*>& taken);
  std::vector<Revisit*> first_of_each_dtype(RankedByDtype& by_dtype) const;
  void wait_for_quiet();
  bool confirms_after_watch(const MemoryPoint& p, std::int64_t device_memory_from) const;
  void watch_to_deadline();
  double gemm_last_looks_s() const;
  double gemm_last_look_wait_s() const;
  int gemm_last_looks();
  void confirm_peaks();
  bool confirms_in_last_cache(std::string_view kernel, std::int64_t bytes) const;

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

// `remeasure`: measure again while the sentinel says the machine is busy (Plan::max_remeasure).
template <typename Make>
std::optional<Measured> DeviceRun::point(const std::string& klass, const std::string& what, const StopRule& rule,
                                         Make make, bool remeasure) {
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

}  // namespace truepeak::driver_detail
