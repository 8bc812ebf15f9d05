// Device helpers shared by the .cu files: element loads as double and the random hash.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "kernels/cuda/device_kernels.hpp"

namespace truepeak::cuda_detail {

__host__ __device__ inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <Elem E>
struct ElemType;
template <>
struct ElemType<Elem::f64> {
  using type = double;
};
template <>
struct ElemType<Elem::f32> {
  using type = float;
};
template <>
struct ElemType<Elem::f16> {
  using type = __half;
};
template <>
struct ElemType<Elem::bf16> {
  using type = __nv_bfloat16;
};
template <>
struct ElemType<Elem::fp8_e4m3> {
  using type = __nv_fp8_e4m3;
};
template <>
struct ElemType<Elem::int8> {
  using type = std::int8_t;
};
template <>
struct ElemType<Elem::int32> {
  using type = std::int32_t;
};

template <Elem E>
__device__ inline double load_as_double(const void* base, std::int64_t index) {
  const auto* p = static_cast<const typename ElemType<E>::type*>(base) + index;
  if constexpr (E == Elem::f16) {
    return static_cast<double>(__half2float(*p));
  } else if constexpr (E == Elem::bf16) {
    return static_cast<double>(__bfloat162float(*p));
  } else if constexpr (E == Elem::fp8_e4m3) {
    return static_cast<double>(static_cast<float>(*p));
  } else {
    return static_cast<double>(*p);
  }
}

}  // namespace truepeak::cuda_detail
