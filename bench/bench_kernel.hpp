// Shared by the *_bench executables: runs one backend Kernel under Google Benchmark with manual
// timing (the kernel's own run_s(), which times the work only), after checking its output.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include "core/backend.hpp"
#include "core/error.hpp"

namespace truepeak::bench {

// Kernels are built once per name and kept: Google Benchmark calls a benchmark function several
// times while it picks an iteration count, and set-up (allocation, JIT, first touch) is not work.
class KernelCache {
 public:
  Kernel& get(const std::string& name, const std::function<std::unique_ptr<Kernel>()>& make) {
    auto& slot = kernels_[name];
    if (!slot) {
      slot = make();
      slot->check();
    }
    return *slot;
  }

 private:
  std::map<std::string, std::unique_ptr<Kernel>> kernels_;
};

// Counters: rates over all iterations and from the fastest one (the capability figure).
inline void run_kernel(benchmark::State& state, KernelCache& cache, const std::string& name,
                       const std::function<std::unique_ptr<Kernel>()>& make) {
  Kernel* kernel = nullptr;
  try {
    kernel = &cache.get(name, make);
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    for (auto _ : state) {
    }
    return;
  }
  kernel->run_s();  // warm-up
  double total_s = 0, best_s = std::numeric_limits<double>::infinity();
  std::int64_t runs = 0;
  for (auto _ : state) {
    const double time_s = kernel->run_s();
    state.SetIterationTime(time_s);
    total_s += time_s;
    best_s = std::min(best_s, time_s);
    ++runs;
  }
  if (runs == 0) {
    return;
  }
  const double flops = kernel->flops(), bytes = kernel->bytes();
  if (flops > 0) {
    state.counters["flops_per_s"] = flops * runs / total_s;
    state.counters["best_flops_per_s"] = flops / best_s;
  }
  if (bytes > 0) {
    state.counters["Bps"] = bytes * runs / total_s;
    state.counters["best_Bps"] = bytes / best_s;
  }
  state.counters["best_s"] = best_s;
  std::string label = kernel->impl();
  if (!kernel->layout().empty()) {
    label += " [" + kernel->layout() + "]";
  }
  state.SetLabel(label);
}

}  // namespace truepeak::bench
