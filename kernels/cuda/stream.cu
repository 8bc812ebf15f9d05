// STREAM kernels (copy, scale, add, triad) over doubles, moved as double2: 16-byte accesses,
// several loads in flight per thread (stream_sweep.hpp).
// Pointers are not __restrict__: with `passes` > 1 the compiler must reload every pass instead
// of keeping values from the previous pass in registers.
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_kernels.hpp"
#include "kernels/cuda/stream_sweep.hpp"

namespace truepeak::cuda_detail {

namespace {

constexpr int kStreamThreads = 256;

struct Pair {
  double2 x, y;
};

template <StreamKind Op>
__global__ void stream_kernel(double2* a, double2* b, double2* c, double scalar,
                              std::int64_t count2, int passes) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int pass = 0; pass < passes; ++pass) {
    if constexpr (Op == StreamKind::copy) {
      stream_sweep(
          first, stride, count2, [&](std::int64_t i) { return a[i]; },
          [&](std::int64_t i, double2 x) { c[i] = x; });
    } else if constexpr (Op == StreamKind::scale) {
      stream_sweep(
          first, stride, count2, [&](std::int64_t i) { return c[i]; },
          [&](std::int64_t i, double2 x) { b[i] = make_double2(scalar * x.x, scalar * x.y); });
    } else if constexpr (Op == StreamKind::add) {
      stream_sweep(
          first, stride, count2,
          [&](std::int64_t i) {
            return Pair{a[i], b[i]};
          },
          [&](std::int64_t i, Pair p) { c[i] = make_double2(p.x.x + p.y.x, p.x.y + p.y.y); });
    } else {
      stream_sweep(
          first, stride, count2,
          [&](std::int64_t i) {
            return Pair{b[i], c[i]};
          },
          [&](std::int64_t i, Pair p) {
            a[i] = make_double2(p.x.x + scalar * p.y.x, p.x.y + scalar * p.y.y);
          });
    }
  }
}

template <StreamKind Op>
int resident_blocks(int device) {
  (void)device;
  int blocks = 0;
  TP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, reinterpret_cast<const void*>(stream_kernel<Op>), kStreamThreads, 0));
  return blocks;
}

}  // namespace

GridSize stream_grid(int device) {
  int sms = 0;
  TP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // All four kernels use the same registers in practice; take the most restrictive.
  int per_sm = resident_blocks<StreamKind::copy>(device);
  for (int b :
       {resident_blocks<StreamKind::scale>(device), resident_blocks<StreamKind::add>(device),
        resident_blocks<StreamKind::triad>(device)})
    per_sm = b < per_sm ? b : per_sm;
  if (per_sm < 1) per_sm = 1;
  return {sms * per_sm, kStreamThreads};
}

void launch_stream(StreamKind op, double* a, double* b, double* c, double scalar,
                   std::int64_t count, int passes, GridSize grid, cudaStream_t stream) {
  auto* a2 = reinterpret_cast<double2*>(a);
  auto* b2 = reinterpret_cast<double2*>(b);
  auto* c2 = reinterpret_cast<double2*>(c);
  const std::int64_t count2 = count / 2;
  switch (op) {
    case StreamKind::copy:
      stream_kernel<StreamKind::copy>
          <<<grid.blocks, grid.threads, 0, stream>>>(a2, b2, c2, scalar, count2, passes);
      break;
    case StreamKind::scale:
      stream_kernel<StreamKind::scale>
          <<<grid.blocks, grid.threads, 0, stream>>>(a2, b2, c2, scalar, count2, passes);
      break;
    case StreamKind::add:
      stream_kernel<StreamKind::add>
          <<<grid.blocks, grid.threads, 0, stream>>>(a2, b2, c2, scalar, count2, passes);
      break;
    case StreamKind::triad:
      stream_kernel<StreamKind::triad>
          <<<grid.blocks, grid.threads, 0, stream>>>(a2, b2, c2, scalar, count2, passes);
      break;
  }
  TP_CUDA_CHECK_LAUNCH();
}

}  // namespace truepeak::cuda_detail
