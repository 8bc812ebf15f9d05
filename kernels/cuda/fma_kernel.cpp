// Arithmetic peak of the CUDA cores (own FMA chains), and the sentinel: the same kernel on a
// small fixed grid, timed between points to notice other work on the GPU.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/cuda_owners.hpp"
#include "kernels/cuda/device_kernels.hpp"
#include "kernels/cuda/nvml.hpp"

namespace truepeak::cuda_detail {

namespace {

constexpr double kTargetLaunchS = 2e-3;  // long enough for a steady clock, short per sample
constexpr int kCheckedThreads = 64;

// Round to the nearest f16 value, ties to even (normal range: the chains stay near 1).
double round_to_half(double v) {
  if (v == 0) return 0;
  int exponent = 0;
  std::frexp(v, &exponent);  // v = f * 2^exponent, 0.5 <= |f| < 1
  const double ulp = std::ldexp(1.0, exponent - 11);
  return std::nearbyint(v / ulp) * ulp;
}

double half_bits_to_double(std::uint16_t bits) {
  const int sign = bits >> 15, exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double value =
      exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  if (exponent == 31) value = mantissa ? NAN : INFINITY;
  return sign ? -value : value;
}

// The value thread `thread` writes (lane 0 or 1 of a half2), replayed on the host.
double replay(Elem elem, std::int64_t thread, int lane, int iterations) {
  if (elem == Elem::f64) {
    double sum = 0;
    for (int j = 0; j < kFmaChains; ++j) {
      double x = fma_start_value(thread, j, 0);
      for (int i = 0; i < iterations; ++i) x = std::fma(x, kFmaA, kFmaB);
      sum += x;
    }
    return sum;
  }
  if (elem == Elem::f32) {
    float sum = 0;
    for (int j = 0; j < kFmaChains; ++j) {
      auto x = static_cast<float>(fma_start_value(thread, j, 0));
      for (int i = 0; i < iterations; ++i)
        x = std::fma(x, static_cast<float>(kFmaA), static_cast<float>(kFmaB));
      sum += x;
    }
    return sum;
  }
  double sum = 0;  // f16: every step rounds once, as __hfma2 and __hadd2 do
  for (int j = 0; j < kFmaChains; ++j) {
    double x = fma_start_value(thread, j, lane);
    for (int i = 0; i < iterations; ++i) x = round_to_half(x * kFmaA + kFmaB);
    sum = j == 0 ? x : round_to_half(sum + x);
  }
  return sum;
}

Elem fma_elem(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return Elem::f64;
    case DType::f32:
      return Elem::f32;
    case DType::f16:
      return Elem::f16;
    default:
      throw Unsupported(fmt::format(
          "no CUDA-core FMA kernel for {} (f64, f32 and f16 are measured)", to_string(dtype)));
  }
}

class FmaKernel final : public Kernel {
 public:
  // iterations == 0: sized so that one launch takes about kTargetLaunchS.
  FmaKernel(const DeviceFacts& device, DType dtype, std::optional<GridSize> grid, int iterations,
            std::string label)
      : device_(device.index),
        monitor_(device.monitor),
        dtype_(dtype),
        elem_(fma_elem(dtype)),
        label_(std::move(label)) {
    use_device(device_);
    stream_ = make_stream();
    timer_.emplace();
    grid_ = grid ? *grid : fma_grid(device_, elem_);
    const std::int64_t threads = static_cast<std::int64_t>(grid_.blocks) * grid_.threads;
    out_ = make_device_buffer(threads * 8);
    iterations_ = iterations > 0 ? iterations : 256;
    if (iterations == 0) {
      launch();  // warm (module load), then one timed launch sizes the real count
      timer_->start(stream_.get());
      launch();
      timer_->stop(stream_.get());
      const double launch_s = std::max(timer_->elapsed_s(), 1e-6);
      iterations_ =
          static_cast<int>(std::clamp(iterations_ * kTargetLaunchS / launch_s, 256.0, 1048576.0));
    }
  }

  std::string name() const override { return label_; }
  double flops() const override {
    const double lanes = elem_ == Elem::f16 ? 2 : 1;  // a half2 FMA is two FMAs
    return 2.0 * lanes * kFmaChains * iterations_ * static_cast<double>(grid_.blocks) *
           grid_.threads;
  }
  double bytes() const override { return 0; }
  std::string impl() const override {
    return fmt::format("own kernel, {} chains/thread, {} iterations, grid {}x{}{}", kFmaChains,
                       iterations_, grid_.blocks, grid_.threads, fastest_.text());
  }

  void check() override {
    use_device(device_);
    launch();
    const std::int64_t threads = static_cast<std::int64_t>(grid_.blocks) * grid_.threads;
    const int element_bytes = elem_ == Elem::f64 ? 8 : 4;  // f16 writes a half2
    std::vector<unsigned char> host(static_cast<std::size_t>(threads * element_bytes));
    TP_CUDA_CHECK(cudaMemcpyAsync(host.data(), out_.get(), host.size(), cudaMemcpyDeviceToHost,
                                  stream_.get()));
    TP_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    const std::int64_t step = std::max<std::int64_t>(1, threads / kCheckedThreads);
    for (std::int64_t t = 0; t < threads; t += step) {
      for (int lane = 0; lane < (elem_ == Elem::f16 ? 2 : 1); ++lane) {
        const unsigned char* p = host.data() + t * element_bytes;
        double got = 0, tol = 0;
        if (elem_ == Elem::f64) {
          std::memcpy(&got, p, 8);
          tol = 1e-12;
        } else if (elem_ == Elem::f32) {
          float value = 0;
          std::memcpy(&value, p, 4);
          got = value;
          tol = 1e-5;
        } else {
          std::uint16_t bits = 0;
          std::memcpy(&bits, p + 2 * lane, 2);
          got = half_bits_to_double(bits);
          tol = 1e-2;
        }
        const double expected = replay(elem_, t, lane, iterations_);
        if (!(std::fabs(got - expected) <= tol * std::fabs(expected)))
          throw CheckFailed(fmt::format("{}: thread {} wrote {} but the chains give {}", name(), t,
                                        got, expected));
      }
    }
  }

  double run_s() override {
    use_device(device_);
    timer_->start(stream_.get());
    launch();
    timer_->stop(stream_.get());
    const double launch_s = timer_->elapsed_s();
    fastest_.note(launch_s, monitor_.get());
    return launch_s;
  }

 private:
  void launch() { launch_fma(elem_, out_.get(), grid_, iterations_, stream_.get()); }

  int device_;
  std::shared_ptr<const NvmlMonitor> monitor_;
  FastestSampleState fastest_;
  DType dtype_;
  Elem elem_;
  std::string label_;
  GridSize grid_;
  int iterations_ = 0;
  Stream stream_;
  std::optional<EventTimer> timer_;
  DeviceBuffer out_;
};

}  // namespace

std::unique_ptr<Kernel> make_fma_kernel(const DeviceFacts& device, DType dtype) {
  return std::make_unique<FmaKernel>(device, dtype, std::nullopt, 0,
                                     fmt::format("fma {}", to_string(dtype)));
}

std::unique_ptr<Kernel> make_sentinel_kernel(const DeviceFacts& device) {
  // One block per SM and a fixed count: about 0.2 ms on an H100-class part, long enough that
  // launch jitter stays small beside it, and the same work on every GPU run.
  return std::make_unique<FmaKernel>(device, DType::f32, GridSize{device.sms, kFmaThreads}, 16384,
                                     "sentinel fma f32");
}

}  // namespace truepeak::cuda_detail
