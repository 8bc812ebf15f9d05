// Shared by the *_bench executables: runs one backend Kernel under Google Benchmark with manual
// timing (the kernel's own run_s(), which times the work only), after checking its output.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

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

// What the benchmarks of one executable came to: a kernel this CPU cannot run (Unsupported) is
// skipped; one that fails to build or fails its check is a failure, and the executable exits 1.
struct Outcome {
  int ran = 0;
  int skipped = 0;
  int failed = 0;
};
inline Outcome outcome;

// Counters: rates over all iterations and from the fastest one (the capability figure).
inline void run_kernel(benchmark::State& state, KernelCache& cache, const std::string& name,
                       const std::function<std::unique_ptr<Kernel>()>& make) {
  Kernel* kernel = nullptr;
  try {
    kernel = &cache.get(name, make);
  } catch (const Unsupported& e) {
    state.SkipWithError((std::string("skipped, not supported here: ") + e.what()).c_str());
    ++outcome.skipped;
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    ++outcome.failed;
  }
  if (kernel == nullptr) {
    for (auto _ : state) {
    }
    return;
  }
  ++outcome.ran;
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

// Registers `name` to run the kernel `make` builds, with manual timing in `unit`.
inline void register_kernel(KernelCache& cache, const std::string& name,
                            std::function<std::unique_ptr<Kernel>()> make,
                            benchmark::TimeUnit unit) {
  benchmark::RegisterBenchmark(
      name.c_str(),
      [&cache, name, make](benchmark::State& state) { run_kernel(state, cache, name, make); })
      ->UseManualTime()
      ->Unit(unit);
}

// Runs the benchmarks the filter picked. Returns the exit status: 1 if a kernel failed or nothing
// ran, else 0 (skipped kernels are reported but are not failures).
inline int run_benchmarks() {
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (outcome.failed > 0) {
    std::fprintf(stderr, "%d benchmark(s) failed\n", outcome.failed);
    return 1;
  }
  if (outcome.ran + outcome.skipped == 0) {
    std::fprintf(stderr, "no benchmark matched the filter\n");
    return 1;
  }
  return 0;
}

// The command line every *_bench executable takes: `option` (e.g. "--shape=", repeatable; the
// text after it goes to `on_value`), --threads=N into `threads`, and Google Benchmark's own flags.
// Returns 0, or the exit status (2) after printing what was wrong.
inline int parse_command_line(int argc, char** argv, const char* program, const std::string& option,
                              const std::function<void(const std::string&)>& on_value,
                              int& threads) {
  std::vector<char*> rest;
  try {
    for (int i = 0; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg.rfind(option, 0) == 0) {
        on_value(arg.substr(option.size()));
      } else if (arg.rfind("--threads=", 0) == 0) {
        threads = std::stoi(arg.substr(10));
      } else {
        rest.push_back(argv[i]);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 2;
  }
  int rest_count = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_count, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_count, rest.data())) {
    return 2;
  }
  return 0;
}

}  // namespace truepeak::bench
