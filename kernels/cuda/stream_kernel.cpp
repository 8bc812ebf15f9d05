// STREAM kernels (own, 16-byte accesses, grid filling the GPU) and the runtime's device-to-device
// copy. Working sets well inside L2 measure L2; at 4x L2 and beyond, device memory.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/cuda_owners.hpp"
#include "kernels/cuda/device_kernels.hpp"
#include "kernels/cuda/memory_fit.hpp"

namespace truepeak::cuda_detail {

namespace {

static_assert(static_cast<int>(StreamKind::triad) == static_cast<int>(StreamOp::triad));

constexpr double kScalar = 0.4;
constexpr int kCheckSamples = 1024;
// Small working sets repeat the sweep inside one launch until a launch moves about this much,
// so the launch overhead stays a small part of the time.
constexpr std::int64_t kBytesPerLaunch = kGiB;
constexpr int kMaxPasses = 4096;

std::vector<std::int64_t> sample_positions(std::int64_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> out = {0, count - 1};
  for (int i = 0; i < kCheckSamples; ++i)
    out.push_back(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(count)));
  return out;
}

// Reads doubles at `positions` of a device array.
class Sampler {
 public:
  Sampler(const std::vector<std::int64_t>& positions, cudaStream_t stream)
      : count_(static_cast<int>(positions.size())), stream_(stream) {
    index_ = make_device_buffer(count_ * static_cast<std::int64_t>(sizeof(std::int64_t)));
    values_ = make_device_buffer(count_ * static_cast<std::int64_t>(sizeof(double)));
    TP_CUDA_CHECK(cudaMemcpyAsync(index_.get(), positions.data(), count_ * sizeof(std::int64_t),
                                  cudaMemcpyHostToDevice, stream_));
  }
  std::vector<double> read(const double* array) {
    std::vector<double> out(count_);
    gather_f64(array, index_.as<std::int64_t>(), values_.as<double>(), count_, stream_);
    TP_CUDA_CHECK(cudaMemcpyAsync(out.data(), values_.get(), count_ * sizeof(double),
                                  cudaMemcpyDeviceToHost, stream_));
    TP_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return out;
  }

 private:
  int count_;
  cudaStream_t stream_;
  DeviceBuffer index_, values_;
};

class StreamKernel final : public Kernel {
 public:
  StreamKernel(const DeviceFacts& device, StreamOp op, std::int64_t bytes)
      : device_(device.index), op_(op) {
    const int arrays = stream_arrays(op);
    count_ = bytes / arrays / 8 / 2 * 2;  // double2 accesses: an even count
    if (count_ < 2)
      throw InputError(fmt::format("stream {}: {} bytes is too small", to_string(op), bytes));
    use_device(device_);
    require_device_bytes(arrays * count_ * 8, name());
    stream_ = make_stream();
    timer_.emplace();
    grid_ = stream_grid(device_);
    passes_ =
        static_cast<int>(std::clamp<std::int64_t>(kBytesPerLaunch / this->bytes(), 1, kMaxPasses));
    const bool uses_a = op != StreamOp::scale;
    const bool uses_b = op != StreamOp::copy;
    if (uses_a) a_ = make_device_buffer(count_ * 8);
    if (uses_b) b_ = make_device_buffer(count_ * 8);
    c_ = make_device_buffer(count_ * 8);  // every op uses c
    std::uint64_t seed = 21;
    for (DeviceBuffer* buffer : {&a_, &b_, &c_})
      if (buffer->get() != nullptr)
        fill_random(buffer->get(), Elem::f64, count_, seed++, stream_.get());
    TP_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  std::string name() const override {
    return fmt::format("stream {} {}", to_string(op_), format_bytes(bytes()));
  }
  double flops() const override { return 0; }
  double bytes() const override { return static_cast<double>(stream_arrays(op_) * count_ * 8); }
  std::string impl() const override {
    return fmt::format("own kernel, double2 accesses, grid {}x{}, {} passes per launch",
                       grid_.blocks, grid_.threads, passes_);
  }

  void check() override {
    use_device(device_);
    const std::vector<std::int64_t> positions = sample_positions(count_, 7);
    Sampler sampler(positions, stream_.get());
    const auto read = [&](const DeviceBuffer& buffer) {
      return buffer.get() != nullptr ? sampler.read(buffer.as<double>()) : std::vector<double>();
    };
    const std::vector<double> a = read(a_), b = read(b_), c = read(c_);
    launch(1);
    const std::vector<double> out = sampler.read(output());
    for (std::size_t i = 0; i < positions.size(); ++i) {
      double expected = 0, scale = 0;
      switch (op_) {
        case StreamOp::copy:
          expected = a[i];
          scale = std::fabs(a[i]);
          break;
        case StreamOp::scale:
          expected = kScalar * c[i];
          scale = std::fabs(expected);
          break;
        case StreamOp::add:
          expected = a[i] + b[i];
          scale = std::fabs(a[i]) + std::fabs(b[i]);
          break;
        case StreamOp::triad:
          expected = b[i] + kScalar * c[i];
          scale = std::fabs(b[i]) + std::fabs(kScalar * c[i]);
          break;
        case StreamOp::update:  // not made here (make_stream_kernel)
          break;
      }
      // The device may fuse b + s*c into one FMA: a rounding difference, nothing more.
      if (!(std::fabs(out[i] - expected) <= 1e-14 * scale))
        throw CheckFailed(fmt::format("{}: element {} is {} but should be {}", name(), positions[i],
                                      out[i], expected));
    }
  }

  double run_s() override {
    use_device(device_);
    timer_->start(stream_.get());
    launch(passes_);
    timer_->stop(stream_.get());
    return timer_->elapsed_s() / passes_;
  }

 private:
  void launch(int passes) {
    launch_stream(static_cast<StreamKind>(op_), a_.as<double>(), b_.as<double>(), c_.as<double>(),
                  kScalar, count_, passes, grid_, stream_.get());
  }
  const double* output() const {
    switch (op_) {
      case StreamOp::copy:
        return c_.as<double>();
      case StreamOp::scale:
        return b_.as<double>();
      case StreamOp::add:
        return c_.as<double>();
      case StreamOp::triad:
        return a_.as<double>();
      case StreamOp::update:  // not made here (make_stream_kernel)
        break;
    }
    return nullptr;
  }

  int device_;
  StreamOp op_;
  std::int64_t count_ = 0;  // doubles per array
  int passes_ = 1;
  GridSize grid_;
  Stream stream_;
  std::optional<EventTimer> timer_;
  DeviceBuffer a_, b_, c_;
};

class DeviceCopyKernel final : public Kernel {
 public:
  DeviceCopyKernel(const DeviceFacts& device, std::int64_t bytes) : device_(device.index) {
    count_ = bytes / 8;
    if (count_ < 1) throw InputError(fmt::format("device copy: {} bytes is too small", bytes));
    use_device(device_);
    require_device_bytes(2 * count_ * 8, name());
    stream_ = make_stream();
    timer_.emplace();
    src_ = make_device_buffer(count_ * 8);
    dst_ = make_device_buffer(count_ * 8);
    fill_random(src_.get(), Elem::f64, count_, 31, stream_.get());
    fill_random(dst_.get(), Elem::f64, count_, 32, stream_.get());
    inner_ = static_cast<int>(std::clamp<std::int64_t>(256 * kMiB / (count_ * 8), 1, 64));
    TP_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  std::string name() const override {
    return fmt::format("device_copy {}", format_bytes(static_cast<double>(count_ * 8)));
  }
  double flops() const override { return 0; }
  double bytes() const override { return 2.0 * static_cast<double>(count_ * 8); }  // read + write
  std::string impl() const override {
    return fmt::format("cudaMemcpyAsync device-to-device, {} per sample", inner_);
  }

  void check() override {
    use_device(device_);
    copy();
    Sampler sampler(sample_positions(count_, 9), stream_.get());
    if (sampler.read(src_.as<double>()) != sampler.read(dst_.as<double>()))
      throw CheckFailed(name() + ": the destination differs from the source");
  }

  double run_s() override {
    use_device(device_);
    timer_->start(stream_.get());
    for (int i = 0; i < inner_; ++i) copy();
    timer_->stop(stream_.get());
    return timer_->elapsed_s() / inner_;
  }

 private:
  void copy() {
    TP_CUDA_CHECK(cudaMemcpyAsync(dst_.get(), src_.get(), static_cast<std::size_t>(count_ * 8),
                                  cudaMemcpyDeviceToDevice, stream_.get()));
  }

  int device_;
  std::int64_t count_ = 0;
  int inner_ = 1;
  Stream stream_;
  std::optional<EventTimer> timer_;
  DeviceBuffer src_, dst_;
};

}  // namespace

std::unique_ptr<Kernel> make_stream_kernel(const DeviceFacts& device, StreamOp op,
                                           std::int64_t bytes) {
  // The in-place sweep serves the CPU estimate's in-place ops; a GPU's caches take whole-sector
  // writes without a read, so its copy and triad already tell what such an op moves.
  if (op == StreamOp::update)
    throw Unsupported(fmt::format("stream {}: not measured on a GPU", to_string(op)));
  return std::make_unique<StreamKernel>(device, op, bytes);
}

std::unique_ptr<Kernel> make_device_copy_kernel(const DeviceFacts& device, std::int64_t bytes) {
  return std::make_unique<DeviceCopyKernel>(device, bytes);
}

}  // namespace truepeak::cuda_detail
