// GEMM through the CPU backend (oneDNN matmul). Benchmarks are named gemm/<shape>, e.g.
// gemm/f32_b1m2048n2048k2048; add shapes with --shape=<shape> (repeatable), pick with
// --benchmark_filter, set threads with --threads=N.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_kernel.hpp"
#include "kernels/cpu/cpu_backend.hpp"

int main(int argc, char** argv) {
  using namespace truepeak;
  std::vector<GemmShape> shapes;
  for (const DType dtype : {DType::f32, DType::bf16, DType::int8}) {
    for (const std::int64_t size : {64, 256, 1024, 2048, 4096}) {
      shapes.push_back({dtype, size, size, size, 1});
    }
    shapes.push_back({dtype, 1, 4096, 4096, 1});
    shapes.push_back({dtype, 32, 4096, 4096, 1});
    shapes.push_back({dtype, 2048, 2048, 64, 1});
    shapes.push_back({dtype, 128, 128, 64, 12});
  }
  CpuBackendOptions options;
  if (const int status = bench::parse_command_line(
          argc, argv, "gemm_bench",
          "--shape=", [&](const std::string& value) { shapes.push_back(GemmShape::parse(value)); },
          options.threads)) {
    return status;
  }
  auto backend = make_cpu_backend(options);
  bench::KernelCache cache;
  for (const auto& shape : shapes) {
    const std::string name = "gemm/" + shape.str();
    bench::register_kernel(
        cache, name, [&backend, shape] { return backend->gemm(shape); }, benchmark::kMillisecond);
  }
  return bench::run_benchmarks();
}
