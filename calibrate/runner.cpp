#include "calibrate/runner.hpp"

#include <chrono>

namespace truepeak {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool raised(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(std::memory_order_relaxed); }

}  // namespace

PointResult measure(Kernel& kernel, const StopRule& rule, const std::atomic<bool>* stop) {
  const auto warm_start = std::chrono::steady_clock::now();
  for (int i = 0; i < rule.warmup_runs || seconds_since(warm_start) < rule.warmup_s; ++i) {
    kernel.run_s();
    if (raised(stop)) break;
  }

  PointResult result;
  StopState state(rule);
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    const double sample_s = kernel.run_s();
    if (state.add(sample_s, seconds_since(start))) break;
    if (raised(stop)) {
      result.interrupted = true;
      break;
    }
  }
  result.summary = state.summary();
  result.samples = state.samples();
  result.reason = state.reason();
  return result;
}

}  // namespace truepeak
