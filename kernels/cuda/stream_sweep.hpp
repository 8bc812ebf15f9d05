// One thread's share of a grid-stride sweep, shared by the STREAM kernels (nvcc) and their host
// test (g++). GPUs issue a thread's instructions in order: a loop of load-then-store keeps one
// load in flight per thread, which is too few bytes in flight to reach the L2's bandwidth when a
// small working set gives each thread one or two elements. So each thread loads kStreamUnroll
// elements (first, first + stride, ...) before it stores any of them.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TP_HOST_DEVICE __host__ __device__
#else
#define TP_HOST_DEVICE
#endif
#if defined(__CUDA_ARCH__)  // the device pass only: host compilers warn about the pragma
#define TP_UNROLL _Pragma("unroll")
#else
#define TP_UNROLL
#endif

namespace truepeak::cuda_detail {

inline constexpr int kStreamUnroll = 4;

// Visits indices first, first + stride, first + 2 stride, ... below `count`, each once:
// store(j, load(j)). Together, threads first = 0 .. stride-1 cover [0, count) exactly once.
template <typename Load, typename Store>
TP_HOST_DEVICE inline void stream_sweep(std::int64_t first, std::int64_t stride, std::int64_t count,
                                        Load load, Store store) {
  using Value = decltype(load(first));
  for (std::int64_t base = first; base < count; base += kStreamUnroll * stride) {
    Value values[kStreamUnroll]{};
    TP_UNROLL
    for (int u = 0; u < kStreamUnroll; ++u) {
      const std::int64_t j = base + u * stride;
      if (j < count) values[u] = load(j);
    }
    TP_UNROLL
    for (int u = 0; u < kStreamUnroll; ++u) {
      const std::int64_t j = base + u * stride;
      if (j < count) store(j, values[u]);
    }
  }
}

}  // namespace truepeak::cuda_detail
