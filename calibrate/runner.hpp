// Times one prepared kernel: warm-up, then samples until the stopping rule is met.
#pragma once

#include <atomic>
#include <vector>

#include "core/backend.hpp"
#include "core/stats.hpp"

namespace truepeak {

struct PointResult {
  Summary summary;
  std::vector<double> samples;  // every timed sample, in order
  StopReason reason = StopReason::max_samples;
  bool interrupted = false;  // the stop flag was raised while sampling
};

// Never times the first call: warm-up runs first (library JIT, page faults, clocks ramping).
// `stop` (may be null) is polled between samples; when it is raised, sampling ends early with
// what was taken so far (at least one sample).
PointResult measure(Kernel& kernel, const StopRule& rule, const std::atomic<bool>* stop = nullptr);

}  // namespace truepeak
