// STREAM kernels (copy, scale, add, triad) through the CPU backend, plus its FMA kernel, the
// per-op overhead and the vector ops between the GEMMs (vector_op/<op>_<dtype>_<rows>x<cols>, at
// the calibration's sizes). Benchmarks are named stream/<op>/<bytes> (total working set of all arrays);
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
  if (const int status = bench::parse_command_line(
          argc, argv, "stream_bench",
          "--bytes=", [&](const std::string& value) { extra.push_back(parse_bytes(value)); },
          options.threads)) {
    return status;
  }
  auto backend = make_cpu_backend(options);
  const std::int64_t llc = std::max(8 * kMiB, largest_cache_bytes(backend->describe().levels));
  std::vector<std::int64_t> sizes = {48 * kKiB, 1 * kMiB, 32 * kMiB,
                                     (4 * llc + llc / 4 + kMiB - 1) / kMiB * kMiB};
  sizes.insert(sizes.end(), extra.begin(), extra.end());

  bench::KernelCache cache;
  for (const StreamOp op : {StreamOp::copy, StreamOp::scale, StreamOp::add, StreamOp::triad, StreamOp::update}) {
    for (const std::int64_t bytes : sizes) {
      const std::string name = "stream/" + std::string(to_string(op)) + "/" + std::to_string(bytes);
      bench::register_kernel(
          cache, name, [&backend, op, bytes] { return backend->stream(op, bytes); },
          benchmark::kMicrosecond);
    }
  }
  bench::register_kernel(
      cache, "fma/f32", [&backend] { return backend->fma(DType::f32); }, benchmark::kMicrosecond);
  bench::register_kernel(
      cache, "overhead/tiny_op", [&backend] { return backend->tiny_op(); },
      benchmark::kMicrosecond);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    for (const auto& op : vector_op_names()) {
      const VectorOpShape shape =
          calibration_shape(op, dtype, cpu_channel_block(backend->describe().properties));
      bench::register_kernel(
          cache, "vector_op/" + shape.str(), [&backend, shape] { return backend->vector_op(shape); },
          benchmark::kMicrosecond);
    }
  }
  return bench::run_benchmarks();
}
