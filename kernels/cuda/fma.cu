// FMA chains that keep the CUDA cores busy: kFmaChains independent chains per thread, with the
// constants a and b as kernel arguments so nothing folds at compile time. Every thread stores
// the sum of its chains: the result is checked on the host, and the store keeps the chains alive
// (one store per thread after thousands of FMAs costs nothing measurable).
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_elem.cuh"

namespace truepeak::cuda_detail {

namespace {

__host__ __device__ inline double start_value(std::int64_t thread, int chain, int lane) {
  // In [0.5, 1.5): away from zero, exact in f16.
  const std::uint64_t h = splitmix64(static_cast<std::uint64_t>(thread) * 64u + chain * 2u + lane);
  return 0.5 + static_cast<double>(h >> 54) / 1024.0;
}

template <typename T>
__global__ void fma_kernel(T* out, T a, T b, int iterations) {
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  T x[kFmaChains];
#pragma unroll
  for (int j = 0; j < kFmaChains; ++j) x[j] = static_cast<T>(start_value(thread, j, 0));
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int j = 0; j < kFmaChains; ++j) {
      if constexpr (sizeof(T) == 8) {
        x[j] = ::fma(x[j], a, b);
      } else {
        x[j] = ::fmaf(x[j], a, b);
      }
    }
  }
  T sum = 0;
#pragma unroll
  for (int j = 0; j < kFmaChains; ++j) sum += x[j];
  out[thread] = sum;
}

__global__ void fma_half2_kernel(__half2* out, __half2 a, __half2 b, int iterations) {
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  __half2 x[kFmaChains];
#pragma unroll
  for (int j = 0; j < kFmaChains; ++j)
    x[j] = __floats2half2_rn(static_cast<float>(start_value(thread, j, 0)),
                             static_cast<float>(start_value(thread, j, 1)));
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int j = 0; j < kFmaChains; ++j) x[j] = __hfma2(x[j], a, b);
  }
  __half2 sum = x[0];
#pragma unroll
  for (int j = 1; j < kFmaChains; ++j) sum = __hadd2(sum, x[j]);
  out[thread] = sum;
}

template <typename Kernel>
int resident_blocks(Kernel kernel) {
  int blocks = 0;
  TP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, reinterpret_cast<const void*>(kernel), kFmaThreads, 0));
  return blocks < 1 ? 1 : blocks;
}

}  // namespace

double fma_start_value(std::int64_t thread, int chain, int lane) {
  return start_value(thread, chain, lane);
}

GridSize fma_grid(int device, Elem elem) {
  int sms = 0;
  TP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int per_sm = 1;
  switch (elem) {
    case Elem::f64:
      per_sm = resident_blocks(fma_kernel<double>);
      break;
    case Elem::f16:
      per_sm = resident_blocks(fma_half2_kernel);
      break;
    default:
      per_sm = resident_blocks(fma_kernel<float>);
      break;
  }
  return {sms * per_sm, kFmaThreads};
}

void launch_fma(Elem elem, void* out, GridSize grid, int iterations, cudaStream_t stream) {
  switch (elem) {
    case Elem::f64:
      fma_kernel<double><<<grid.blocks, grid.threads, 0, stream>>>(static_cast<double*>(out), kFmaA,
                                                                   kFmaB, iterations);
      break;
    case Elem::f16: {
      const __half2 a = __float2half2_rn(static_cast<float>(kFmaA));
      const __half2 b = __float2half2_rn(static_cast<float>(kFmaB));
      fma_half2_kernel<<<grid.blocks, grid.threads, 0, stream>>>(static_cast<__half2*>(out), a, b,
                                                                 iterations);
      break;
    }
    default:
      fma_kernel<float><<<grid.blocks, grid.threads, 0, stream>>>(
          static_cast<float*>(out), static_cast<float>(kFmaA), static_cast<float>(kFmaB),
          iterations);
      break;
  }
  TP_CUDA_CHECK_LAUNCH();
}

}  // namespace truepeak::cuda_detail
