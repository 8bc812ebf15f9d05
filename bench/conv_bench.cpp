// Convolution through the CPU backend (oneDNN). Benchmarks are named conv/<layout>/<shape>, e.g.
// conv/any/f32_g1mb1ic64ih56oc64kh3sh1ph1dh1; add shapes with --shape=<shape> (repeatable, run in
// every layout), pick with --benchmark_filter, set threads with --threads=N.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_kernel.hpp"
#include "kernels/cpu/cpu_backend.hpp"

namespace {

truepeak::ConvShape layer(truepeak::DType dtype, std::int64_t n, std::int64_t c, std::int64_t hw,
                          std::int64_t k, std::int64_t rs, std::int64_t stride, std::int64_t pad,
                          std::int64_t groups = 1) {
  truepeak::ConvShape s;
  s.dtype = dtype;
  s.n = n, s.c = c, s.h = hw, s.w = hw, s.k = k, s.r = rs, s.s = rs;
  s.stride = stride, s.pad = pad, s.dilation = 1, s.groups = groups;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace truepeak;
  std::vector<ConvShape> shapes;
  for (const DType dtype : {DType::f32, DType::bf16}) {
    for (const std::int64_t n : {1, 16}) {
      shapes.push_back(layer(dtype, n, 3, 224, 64, 7, 2, 3));
      shapes.push_back(layer(dtype, n, 64, 56, 64, 3, 1, 1));
      shapes.push_back(layer(dtype, n, 256, 14, 1024, 1, 1, 0));
      shapes.push_back(layer(dtype, n, 144, 56, 144, 3, 1, 1, 144));
    }
    shapes.push_back(layer(dtype, 1, 8, 8, 8, 3, 1, 1));  // tiny: for smoke runs
  }
  CpuBackendOptions options;
  if (const int status = bench::parse_command_line(
          argc, argv, "conv_bench",
          "--shape=", [&](const std::string& value) { shapes.push_back(ConvShape::parse(value)); },
          options.threads)) {
    return status;
  }
  auto backend = make_cpu_backend(options);
  bench::KernelCache cache;
  const std::pair<ConvLayout, const char*> layouts[] = {
      {ConvLayout::any, "any"},
      {ConvLayout::blocked, "blocked"},
      {ConvLayout::nhwc, "nhwc"},
      {ConvLayout::nchw, "nchw"}};
  for (const auto& [layout, layout_name] : layouts) {
    for (const auto& shape : shapes) {
      const std::string name = std::string("conv/") + layout_name + "/" + shape.str();
      bench::register_kernel(
          cache, name, [&backend, shape, layout = layout] { return backend->conv(shape, layout); },
          benchmark::kMillisecond);
    }
  }
  return bench::run_benchmarks();
}
