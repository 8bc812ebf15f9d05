// Sampled direct convolution in double precision, one thread per sampled output element.
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_elem.cuh"

namespace truepeak::cuda_detail {

namespace {

template <Elem E>
__global__ void conv_reference_kernel(const void* x, const void* w, const void* y, ConvDims d,
                                      const std::int64_t* samples, int count,
                                      GemmSampleResult* results) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= count) return;
  const std::int64_t nb = samples[4 * s], ko = samples[4 * s + 1];
  const std::int64_t oy = samples[4 * s + 2], ox = samples[4 * s + 3];
  const std::int64_t cpg = d.c / d.groups;  // input channels per group
  const std::int64_t group = ko / (d.k / d.groups);
  double sum = 0, abs_sum = 0;
  for (std::int64_t ci = 0; ci < cpg; ++ci) {
    const std::int64_t c = group * cpg + ci;
    for (std::int64_t ry = 0; ry < d.r; ++ry) {
      const std::int64_t iy = oy * d.stride - d.pad + ry * d.dilation;
      if (iy < 0 || iy >= d.h) continue;
      for (std::int64_t sx = 0; sx < d.s; ++sx) {
        const std::int64_t ix = ox * d.stride - d.pad + sx * d.dilation;
        if (ix < 0 || ix >= d.w) continue;
        const std::int64_t xi = d.nhwc ? ((nb * d.h + iy) * d.w + ix) * d.c + c
                                       : ((nb * d.c + c) * d.h + iy) * d.w + ix;
        const std::int64_t wi = d.nhwc ? ((ko * d.r + ry) * d.s + sx) * cpg + ci
                                       : ((ko * cpg + ci) * d.r + ry) * d.s + sx;
        const double p = load_as_double<E>(x, xi) * load_as_double<E>(w, wi);
        sum += p;
        abs_sum += fabs(p);
      }
    }
  }
  const std::int64_t yi = d.nhwc ? ((nb * d.out_h + oy) * d.out_w + ox) * d.k + ko
                                 : ((nb * d.k + ko) * d.out_h + oy) * d.out_w + ox;
  results[s] = {sum, abs_sum, load_as_double<E>(y, yi)};
}

template <Elem E>
void launch(const void* x, const void* w, const void* y, ConvDims dims, const std::int64_t* samples,
            int count, GemmSampleResult* results, cudaStream_t stream) {
  constexpr int kThreads = 64;
  conv_reference_kernel<E><<<(count + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
      x, w, y, dims, samples, count, results);
  TP_CUDA_CHECK_LAUNCH();
}

}  // namespace

void conv_reference(Elem elem, const void* x, const void* w, const void* y, ConvDims dims,
                    const std::int64_t* samples, int count, GemmSampleResult* results,
                    cudaStream_t stream) {
  switch (elem) {
    case Elem::f32:
      return launch<Elem::f32>(x, w, y, dims, samples, count, results, stream);
    case Elem::f16:
      return launch<Elem::f16>(x, w, y, dims, samples, count, results, stream);
    case Elem::bf16:
      return launch<Elem::bf16>(x, w, y, dims, samples, count, results, stream);
    default:
      throw_cuda_error(cudaErrorInvalidValue, "conv_reference: element type", __FILE__, __LINE__);
  }
}

}  // namespace truepeak::cuda_detail
