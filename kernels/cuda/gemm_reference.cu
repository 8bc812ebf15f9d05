// Sampled GEMM reference in double precision. One thread per sampled output element; both
// operands are contiguous along k in the TN layout, so each thread streams two rows.
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_elem.cuh"

namespace truepeak::cuda_detail {

namespace {

template <Elem In, Elem Out>
__global__ void gemm_reference_kernel(const void* x, const void* w, const void* c, std::int64_t m,
                                      std::int64_t n, std::int64_t k, const std::int64_t* samples,
                                      int count, GemmSampleResult* results) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= count) return;
  const std::int64_t b = samples[3 * s], i = samples[3 * s + 1], j = samples[3 * s + 2];
  const std::int64_t x_row = (b * m + i) * k;
  const std::int64_t w_row = (b * n + j) * k;
  double sum = 0, abs_sum = 0;
  for (std::int64_t kk = 0; kk < k; ++kk) {
    const double p = load_as_double<In>(x, x_row + kk) * load_as_double<In>(w, w_row + kk);
    sum += p;
    abs_sum += fabs(p);
  }
  results[s] = {sum, abs_sum, load_as_double<Out>(c, (b * m + i) * n + j)};
}

template <Elem In, Elem Out>
void launch(const void* x, const void* w, const void* c, std::int64_t m, std::int64_t n,
            std::int64_t k, const std::int64_t* samples, int count, GemmSampleResult* results,
            cudaStream_t stream) {
  constexpr int kThreads = 64;
  gemm_reference_kernel<In, Out><<<(count + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
      x, w, c, m, n, k, samples, count, results);
  TP_CUDA_CHECK_LAUNCH();
}

}  // namespace

void gemm_reference(Elem in, Elem out, const void* x, const void* w, const void* c, std::int64_t m,
                    std::int64_t n, std::int64_t k, const std::int64_t* samples, int count,
                    GemmSampleResult* results, cudaStream_t stream) {
  if (in == Elem::f32 && out == Elem::f32)
    return launch<Elem::f32, Elem::f32>(x, w, c, m, n, k, samples, count, results, stream);
  if (in == Elem::f16 && out == Elem::f16)
    return launch<Elem::f16, Elem::f16>(x, w, c, m, n, k, samples, count, results, stream);
  if (in == Elem::bf16 && out == Elem::bf16)
    return launch<Elem::bf16, Elem::bf16>(x, w, c, m, n, k, samples, count, results, stream);
  if (in == Elem::fp8_e4m3 && out == Elem::bf16)
    return launch<Elem::fp8_e4m3, Elem::bf16>(x, w, c, m, n, k, samples, count, results, stream);
  if (in == Elem::int8 && out == Elem::int32)
    return launch<Elem::int8, Elem::int32>(x, w, c, m, n, k, samples, count, results, stream);
  throw_cuda_error(cudaErrorInvalidValue, "gemm_reference: element types", __FILE__, __LINE__);
}

}  // namespace truepeak::cuda_detail
