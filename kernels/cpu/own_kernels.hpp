// truepeak's own CPU kernels (no library): STREAM over OpenMP threads, the FMA throughput
// kernel, and the sentinel. Also the pure checks they use, so tests can feed them wrong data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/backend.hpp"

namespace truepeak::cpu {

struct StreamOptions {
  int threads = 1;
  // Non-temporal stores for the destination (only where the CPU has them).
  bool non_temporal = false;
  // A run repeats the pass until it takes at least this long, and reports the time per pass.
  double min_sample_s = 20e-6;
};

// `bytes` is the working set of all arrays the op touches (2 for copy/scale, 3 for add/triad).
std::unique_ptr<Kernel> make_stream_kernel(StreamOp op, std::int64_t bytes,
                                           const StreamOptions& options);

// The scalar STREAM uses: b = q * c, a = b + q * c.
inline constexpr double kStreamScalar = 3.0;

// Checks the output of one op over arrays of n elements (arrays not used by the op may be
// empty): copy c = a, scale b = q c, add c = a + b, triad a = b + q c, update c = q a (a: the
// values c held before; q = -1 after an odd number of passes, 1 after an even one). Throws
// CheckFailed.
void check_stream(StreamOp op, std::span<const double> a, std::span<const double> b,
                  std::span<const double> c, double q);

// Vector FMA throughput over all threads: each thread updates many independent accumulator
// chains (acc = acc * mul + add) in the widest vector registers the CPU has.
std::unique_ptr<Kernel> make_fma_kernel(DType dtype, int threads, std::int64_t iterations = 0);
// A short fixed FMA run (~0.3 ms) timed between points to notice interference.
std::unique_ptr<Kernel> make_sentinel_kernel(int threads);

// The FMA chains, exposed for tests: `lanes` x `chains` accumulators start at `init` and take
// `iterations` steps of acc = fma(acc, mul, add); results go to `out` (lanes * chains floats).
struct FmaVariant {
  const char* isa;  // "avx512f", "avx2", "scalar"
  int lanes;
  int chains;
  void (*run)(const float* init, float mul, float add, std::int64_t iterations, float* out);
};
FmaVariant best_fma_variant();
// Reference of one chain computed with scalar fused multiply-adds (same rounding as the vector
// instruction).
float fma_chain_reference(float init, float mul, float add, std::int64_t iterations);

}  // namespace truepeak::cpu
