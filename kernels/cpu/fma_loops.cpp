// FMA chains per ISA. Each variant keeps all its accumulators in registers: enough independent
// chains to cover the FMA latency on every FMA port (AVX-512: 2 ports x 4 cycles -> 8 needed, 16
// used; AVX2: 2 x 4-5 -> 10 needed, 12 used), with the two constants in registers beside them.
#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/own_kernels.hpp"

namespace truepeak::cpu {
namespace {

constexpr int kAvx512Chains = 16;
constexpr int kAvx2Chains = 12;
constexpr int kScalarChains = 8;

__attribute__((target("avx512f"))) void fma_avx512(const float* init, float mul, float add,
                                                   std::int64_t iterations, float* out) {
  __m512 acc[kAvx512Chains];
#pragma GCC unroll 16
  for (int j = 0; j < kAvx512Chains; ++j) {
    acc[j] = _mm512_loadu_ps(init + 16 * j);
  }
  const __m512 vmul = _mm512_set1_ps(mul);
  const __m512 vadd = _mm512_set1_ps(add);
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAvx512Chains; ++j) {
      acc[j] = _mm512_fmadd_ps(acc[j], vmul, vadd);
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < kAvx512Chains; ++j) {
    _mm512_storeu_ps(out + 16 * j, acc[j]);
  }
}

__attribute__((target("avx2,fma"))) void fma_avx2(const float* init, float mul, float add,
                                                  std::int64_t iterations, float* out) {
  __m256 acc[kAvx2Chains];
#pragma GCC unroll 12
  for (int j = 0; j < kAvx2Chains; ++j) {
    acc[j] = _mm256_loadu_ps(init + 8 * j);
  }
  const __m256 vmul = _mm256_set1_ps(mul);
  const __m256 vadd = _mm256_set1_ps(add);
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kAvx2Chains; ++j) {
      acc[j] = _mm256_fmadd_ps(acc[j], vmul, vadd);
    }
  }
#pragma GCC unroll 12
  for (int j = 0; j < kAvx2Chains; ++j) {
    _mm256_storeu_ps(out + 8 * j, acc[j]);
  }
}

// Without hardware FMA std::fma is a library call: correct, but far from any peak; it is only
// here so that every x86-64 CPU gets a checked result.
void fma_scalar(const float* init, float mul, float add, std::int64_t iterations, float* out) {
  float acc[kScalarChains];
  for (int j = 0; j < kScalarChains; ++j) {
    acc[j] = init[j];
  }
  for (std::int64_t i = 0; i < iterations; ++i) {
    for (int j = 0; j < kScalarChains; ++j) {
      acc[j] = std::fma(acc[j], mul, add);
    }
  }
  for (int j = 0; j < kScalarChains; ++j) {
    out[j] = acc[j];
  }
}

}  // namespace

FmaVariant best_fma_variant() {
  if (__builtin_cpu_supports("avx512f")) {
    return {"avx512f", 16, kAvx512Chains, fma_avx512};
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return {"avx2", 8, kAvx2Chains, fma_avx2};
  }
  return {"scalar", 1, kScalarChains, fma_scalar};
}

float fma_chain_reference(float init, float mul, float add, std::int64_t iterations) {
  float acc = init;
  for (std::int64_t i = 0; i < iterations; ++i) {
    acc = std::fma(acc, mul, add);
  }
  return acc;
}

}  // namespace truepeak::cpu
