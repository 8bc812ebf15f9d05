#include "kernels/cpu/stream_loops.hpp"

#include <immintrin.h>

namespace truepeak::cpu {

#define TRUEPEAK_STREAM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

TRUEPEAK_STREAM_CLONES void stream_copy(double* __restrict c, const double* __restrict a,
                                        std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    c[i] = a[i];
  }
}

TRUEPEAK_STREAM_CLONES void stream_scale(double* __restrict b, const double* __restrict c, double q,
                                         std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    b[i] = q * c[i];
  }
}

TRUEPEAK_STREAM_CLONES void stream_add(double* __restrict c, const double* __restrict a,
                                       const double* __restrict b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    c[i] = a[i] + b[i];
  }
}

TRUEPEAK_STREAM_CLONES void stream_triad(double* __restrict a, const double* __restrict b,
                                         const double* __restrict c, double q, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = b[i] + q * c[i];
  }
}

TRUEPEAK_STREAM_CLONES void stream_update(double* __restrict c, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    c[i] = -c[i];
  }
}

bool stream_nt_available() { return __builtin_cpu_supports("avx512f"); }

// Non-temporal forms: 8 doubles per store, a scalar tail. Same arithmetic (no FMA contraction)
// as the plain loops so that results are identical.
#define TRUEPEAK_NT_LOOP(VECTOR_EXPR, SCALAR_EXPR, DST) \
  std::size_t i = 0;                                    \
  for (; i + 8 <= n; i += 8) {                          \
    _mm512_stream_pd(DST + i, VECTOR_EXPR);             \
  }                                                     \
  for (; i < n; ++i) {                                  \
    DST[i] = SCALAR_EXPR;                               \
  }                                                     \
  _mm_sfence();

__attribute__((target("avx512f"))) void stream_copy_nt(double* __restrict c,
                                                       const double* __restrict a, std::size_t n) {
  TRUEPEAK_NT_LOOP(_mm512_loadu_pd(a + i), a[i], c)
}

__attribute__((target("avx512f"))) void stream_scale_nt(double* __restrict b,
                                                        const double* __restrict c, double q,
                                                        std::size_t n) {
  const __m512d vq = _mm512_set1_pd(q);
  TRUEPEAK_NT_LOOP(_mm512_mul_pd(vq, _mm512_loadu_pd(c + i)), q * c[i], b)
}

__attribute__((target("avx512f"))) void stream_add_nt(double* __restrict c,
                                                      const double* __restrict a,
                                                      const double* __restrict b, std::size_t n) {
  TRUEPEAK_NT_LOOP(_mm512_add_pd(_mm512_loadu_pd(a + i), _mm512_loadu_pd(b + i)), a[i] + b[i], c)
}

__attribute__((target("avx512f"))) void stream_triad_nt(double* __restrict a,
                                                        const double* __restrict b,
                                                        const double* __restrict c, double q,
                                                        std::size_t n) {
  const __m512d vq = _mm512_set1_pd(q);
  TRUEPEAK_NT_LOOP(_mm512_add_pd(_mm512_loadu_pd(b + i), _mm512_mul_pd(vq, _mm512_loadu_pd(c + i))),
                   b[i] + q * c[i], a)
}

}  // namespace truepeak::cpu
