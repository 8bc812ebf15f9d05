// Host entry points of truepeak's own CUDA kernels (defined in the .cu files of this folder).
// Each launcher checks the launch; none synchronises. Plain C++17 (no core headers): nvcc
// compiles the .cu files that include it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace truepeak::cuda_detail {

// Element types as stored in device memory.
enum class Elem { f64, f32, f16, bf16, fp8_e4m3, int8, int32 };

// Pseudo-random values from a counter-based hash, so any buffer size fills in one pass and the
// same seed gives the same values: floats uniform in [-1, 1), int8 in [-127, 127]. Never zeros
// (zeros run faster on tensor cores and hide wrong indexing).
void fill_random(void* ptr, Elem elem, std::int64_t count, std::uint64_t seed, cudaStream_t stream);

// dst[i] = src[index[i]] for doubles; used to sample large arrays for checks.
void gather_f64(const double* src, const std::int64_t* index, double* dst, int count,
                cudaStream_t stream);

// --- STREAM ---------------------------------------------------------------------------------
struct GridSize {
  int blocks = 0;
  int threads = 0;
};
// A grid that fills the GPU: SMs x resident blocks per SM (from the occupancy calculator).
GridSize stream_grid(int device);
// copy c=a, scale b=s*c, add c=a+b, triad a=b+s*c over `count` doubles (count even: the kernels
// move double2, 16 bytes per access). `passes` repeats the sweep inside one launch, so that
// small (cache-resident) working sets are not dominated by the launch overhead; the ops are
// idempotent, so the result is the same for any number of passes.
enum class StreamKind { copy, scale, add, triad };  // as StreamOp in core/shapes.hpp
void launch_stream(StreamKind op, double* a, double* b, double* c, double scalar,
                   std::int64_t count, int passes, GridSize grid, cudaStream_t stream);

// --- FMA chains -----------------------------------------------------------------------------
inline constexpr int kFmaChains = 8;  // independent chains per thread: enough ILP to hide latency
// Threads per block of the FMA kernels.
inline constexpr int kFmaThreads = 256;
GridSize fma_grid(int device, Elem elem);
// Each thread runs kFmaChains chains x = x * a + b for `iterations` steps and writes the sum of
// its chains to out[thread] (f64/f32: one value; f16: a half2, two values).
void launch_fma(Elem elem, void* out, GridSize grid, int iterations, cudaStream_t stream);
// The start value of chain `chain` of thread `thread`, and the constants a and b, as the kernel
// uses them (so the host can replay a chain for the check).
double fma_start_value(std::int64_t thread, int chain, int lane);
inline constexpr double kFmaA = 0.9990234375;  // exact in f16, f32 and f64
inline constexpr double kFmaB = 0.0009765625;  // 2^-10: chains converge to b / (1 - a) = 1

// --- launch overhead ------------------------------------------------------------------------
void launch_empty(cudaStream_t stream);

// --- GEMM reference -------------------------------------------------------------------------
// For sampled (batch, row, col) triples of C[b][m][n] = X[b][m][k] * W[b][n][k]^T (the TN
// layout of nn.Linear), computes the reference in double, the sum of |x*w| (the scale of the
// rounding error), and reads the value the library wrote.
struct GemmSampleResult {
  double reference;
  double abs_sum;
  double got;
};
void gemm_reference(Elem in, Elem out, const void* x, const void* w, const void* c, std::int64_t m,
                    std::int64_t n, std::int64_t k, const std::int64_t* samples, int count,
                    GemmSampleResult* results, cudaStream_t stream);

// --- convolution reference ------------------------------------------------------------------
struct ConvDims {
  std::int64_t n, c, h, w, k, r, s, out_h, out_w, stride, pad, dilation, groups;
  bool nhwc;  // activations NHWC and filters KRSC; else NCHW and KCRS
};
// samples: (n, k, oy, ox) quadruples of output elements.
void conv_reference(Elem elem, const void* x, const void* w, const void* y, ConvDims dims,
                    const std::int64_t* samples, int count, GemmSampleResult* results,
                    cudaStream_t stream);

}  // namespace truepeak::cuda_detail
