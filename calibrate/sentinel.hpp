// The calibrate driver's interference detection: short fixed kernels timed between points.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend.hpp"
#include "core/stats.hpp"

namespace truepeak::driver_detail {

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

  void calibrate_baseline(const std::atomic<bool>* stop);

  // True when the machine is busier than it was a moment ago.
  bool slowed(const std::atomic<bool>* stop);

  // True when a probe now runs within the slowdown of the fastest ever seen. Not counted.
  bool quiet(const std::atomic<bool>* stop) { return within(slowdown_ - 1, stop); }

  // True when a probe now runs within `fraction` of the fastest ever seen. Not counted.
  bool within(double fraction, const std::atomic<bool>* stop);

  nlohmann::json report() const;

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
  Sentinel(std::vector<std::unique_ptr<Kernel>> kernels, StopRule rule, double slowdown);

  void calibrate_baseline(const std::atomic<bool>* stop);

  bool slowed(const std::atomic<bool>* stop);

  bool quiet(const std::atomic<bool>* stop);

  // True when the compute probe runs within `fraction` of its fastest: the machine computes as
  // fast as it did at its best (the memory probe aside).
  bool computes_at_best(double fraction, const std::atomic<bool>* stop) {
    return probes_.front().within(fraction, stop);
  }

  // The first probe's figures at the top level; every probe's under "kernels".
  nlohmann::json report(int remeasured) const;

 private:
  std::vector<SentinelProbe> probes_;
  double slowdown_;
  int rounds_ = 0;
  int slow_rounds_ = 0;
};

}  // namespace truepeak::driver_detail
