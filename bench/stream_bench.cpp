// STREAM kernels (copy, scale, add, triad) through the CPU backend, plus its FMA kernel and the
// per-op overhead. Benchmarks are named stream/<op>/<bytes> (total working set of all arrays);
// the default sizes run from inside L1 to past 4x the last-level cache. Add sizes with
// --bytes=N (e.g. 3G; repeatable), set threads with --threads=N.
// Tiny working sets repeat the pass inside one run and report the time per pass, so the wall
// time of a benchmark is longer than its iterations x reported time.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_kernel.hpp"
#include "core/units.hpp"
#include "kernels/cpu/cpu_backend.hpp"

int main(int argc, char** argv) {
  using namespace truepeak;
  CpuBackendOptions options;
  std::vector<std::int64_t> extra;
  std::vector<char*> rest;
  try {
    for (int i = 0; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg.rfind("--bytes=", 0) == 0) {
        extra.push_back(parse_bytes(arg.substr(8)));
      } else if (arg.rfind("--threads=", 0) == 0) {
        options.threads = std::stoi(arg.substr(10));
      } else {
        rest.push_back(argv[i]);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stream_bench: %s\n", e.what());
    return 2;
  }
  int rest_count = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_count, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_count, rest.data())) {
    return 2;
  }
  auto backend = make_cpu_backend(options);
  std::int64_t llc = 8 * kMiB;
  for (const auto& level : backend->describe().levels) {
    if (level.name != "DRAM" && level.bytes) {
      llc = std::max(llc, *level.bytes);
    }
  }
  std::vector<std::int64_t> sizes = {48 * kKiB, 1 * kMiB, 32 * kMiB,
                                     (4 * llc + llc / 4 + kMiB - 1) / kMiB * kMiB};
  sizes.insert(sizes.end(), extra.begin(), extra.end());

  bench::KernelCache cache;
  for (const StreamOp op : {StreamOp::copy, StreamOp::scale, StreamOp::add, StreamOp::triad}) {
    for (const std::int64_t bytes : sizes) {
      const std::string name = "stream/" + std::string(to_string(op)) + "/" + std::to_string(bytes);
      benchmark::RegisterBenchmark(name.c_str(),
                                   [&backend, &cache, op, bytes, name](benchmark::State& state) {
                                     bench::run_kernel(state, cache, name,
                                                       [&] { return backend->stream(op, bytes); });
                                   })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::RegisterBenchmark("fma/f32",
                               [&backend, &cache](benchmark::State& state) {
                                 bench::run_kernel(state, cache, "fma/f32",
                                                   [&] { return backend->fma(DType::f32); });
                               })
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("overhead/tiny_op",
                               [&backend, &cache](benchmark::State& state) {
                                 bench::run_kernel(state, cache, "overhead/tiny_op",
                                                   [&] { return backend->tiny_op(); });
                               })
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
