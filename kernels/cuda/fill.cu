// Random fills and gathers: set-up and check helpers, never timed.
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_elem.cuh"

namespace truepeak::cuda_detail {

namespace {

constexpr int kThreads = 256;

template <Elem E>
__global__ void fill_kernel(void* ptr, std::int64_t count, std::uint64_t seed) {
  using T = typename ElemType<E>::type;
  T* out = static_cast<T*>(ptr);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::uint64_t h = splitmix64(seed * 0x100000001B3ull + static_cast<std::uint64_t>(i));
    if constexpr (E == Elem::int8 || E == Elem::int32) {
      out[i] = static_cast<T>(static_cast<int>(h % 255u) - 127);
    } else {
      // 24 random bits -> uniform in [-1, 1).
      const float u = static_cast<float>(h >> 40) * (2.0f / 16777216.0f) - 1.0f;
      if constexpr (E == Elem::f64) {
        out[i] = static_cast<double>(u);
      } else if constexpr (E == Elem::f32) {
        out[i] = u;
      } else if constexpr (E == Elem::f16) {
        out[i] = __float2half_rn(u);
      } else if constexpr (E == Elem::bf16) {
        out[i] = __float2bfloat16_rn(u);
      } else {
        out[i] = __nv_fp8_e4m3(u);
      }
    }
  }
}

template <Elem E>
void fill_as(void* ptr, std::int64_t count, std::uint64_t seed, cudaStream_t stream) {
  const std::int64_t wanted = (count + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(wanted < 65536 ? (wanted > 0 ? wanted : 1) : 65536);
  fill_kernel<E><<<blocks, kThreads, 0, stream>>>(ptr, count, seed);
  TP_CUDA_CHECK_LAUNCH();
}

__global__ void gather_kernel(const double* src, const std::int64_t* index, double* dst,
                              int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) dst[i] = src[index[i]];
}

}  // namespace

void fill_random(void* ptr, Elem elem, std::int64_t count, std::uint64_t seed,
                 cudaStream_t stream) {
  switch (elem) {
    case Elem::f64:
      return fill_as<Elem::f64>(ptr, count, seed, stream);
    case Elem::f32:
      return fill_as<Elem::f32>(ptr, count, seed, stream);
    case Elem::f16:
      return fill_as<Elem::f16>(ptr, count, seed, stream);
    case Elem::bf16:
      return fill_as<Elem::bf16>(ptr, count, seed, stream);
    case Elem::fp8_e4m3:
      return fill_as<Elem::fp8_e4m3>(ptr, count, seed, stream);
    case Elem::int8:
      return fill_as<Elem::int8>(ptr, count, seed, stream);
    case Elem::int32:
      return fill_as<Elem::int32>(ptr, count, seed, stream);
  }
}

void gather_f64(const double* src, const std::int64_t* index, double* dst, int count,
                cudaStream_t stream) {
  if (count <= 0) return;
  gather_kernel<<<(count + kThreads - 1) / kThreads, kThreads, 0, stream>>>(src, index, dst, count);
  TP_CUDA_CHECK_LAUNCH();
}

}  // namespace truepeak::cuda_detail
