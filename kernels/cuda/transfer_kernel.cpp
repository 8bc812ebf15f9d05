// Host<->device copies with cudaMemcpyAsync, from pinned (cudaHostAlloc) or pageable memory,
// one direction at a time or both at once on two streams.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
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

constexpr std::int64_t kWindowBytes = 64 * kKiB;

// Host memory of either kind behind one pointer.
class HostBuffer {
 public:
  HostBuffer(bool pinned, std::int64_t bytes) {
    if (pinned) {
      pinned_ = make_pinned_buffer(bytes);
      std::memset(pinned_.get(), 0, static_cast<std::size_t>(bytes));
    } else {
      pageable_ = make_pageable_buffer(bytes);
    }
  }
  unsigned char* get() const {
    return static_cast<unsigned char*>(pinned_.get() != nullptr ? pinned_.get() : pageable_.get());
  }

 private:
  PinnedBuffer pinned_;
  PageableBuffer pageable_;
};

// Three windows (start, middle, end) of the host buffer must equal the device's.
void compare_windows(const unsigned char* host, const void* device, std::int64_t bytes,
                     const std::string& what) {
  const std::int64_t window = std::min(bytes, kWindowBytes);
  std::vector<unsigned char> copy(static_cast<std::size_t>(window));
  for (std::int64_t offset : {std::int64_t{0}, (bytes - window) / 2, bytes - window}) {
    TP_CUDA_CHECK(cudaMemcpy(copy.data(), static_cast<const unsigned char*>(device) + offset,
                             copy.size(), cudaMemcpyDeviceToHost));
    if (std::memcmp(copy.data(), host + offset, copy.size()) != 0)
      throw CheckFailed(
          fmt::format("{}: the bytes at offset {} differ after the copy", what, offset));
  }
}

// Puts random bytes into host memory (via the device: a fill kernel and one copy).
void fill_host_random(unsigned char* host, const DeviceBuffer& scratch, std::int64_t bytes,
                      std::uint64_t seed, cudaStream_t stream) {
  fill_random(scratch.get(), Elem::int8, bytes, seed, stream);
  TP_CUDA_CHECK(cudaMemcpyAsync(host, scratch.get(), static_cast<std::size_t>(bytes),
                                cudaMemcpyDeviceToHost, stream));
  TP_CUDA_CHECK(cudaStreamSynchronize(stream));
}

// Small copies are queued several per sample, so the event resolution does not dominate.
int inner_count(std::int64_t bytes) {
  return static_cast<int>(std::clamp<std::int64_t>(kMiB / std::max<std::int64_t>(bytes, 1), 1, 16));
}

class TransferKernel final : public Kernel {
 public:
  TransferKernel(const DeviceFacts& device, TransferDir dir, bool pinned, std::int64_t bytes)
      : device_(device.index),
        dir_(dir),
        pinned_(pinned),
        bytes_(bytes),
        inner_(inner_count(bytes)) {
    if (bytes <= 0) throw InputError("transfer: the size must be positive");
    use_device(device_);
    require_device_bytes(bytes, name());
    stream_ = make_stream();
    timer_.emplace();
    device_buffer_ = make_device_buffer(bytes);
    host_.emplace(pinned, bytes);
    // h2d: the host holds one random pattern and the device another, so the check sees the copy.
    // d2h: the device holds random bytes and the host zeros.
    if (dir == TransferDir::h2d)
      fill_host_random(host_->get(), device_buffer_, bytes, 41, stream_.get());
    fill_random(device_buffer_.get(), Elem::int8, bytes, 42, stream_.get());
    TP_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  std::string name() const override {
    return fmt::format("transfer {} {} {}", to_string(dir_), pinned_ ? "pinned" : "pageable",
                       format_bytes(static_cast<double>(bytes_)));
  }
  double flops() const override { return 0; }
  double bytes() const override { return static_cast<double>(bytes_); }
  std::string impl() const override {
    return fmt::format("cudaMemcpyAsync {} memory, {} per sample", pinned_ ? "pinned" : "pageable",
                       inner_);
  }

  void check() override {
    use_device(device_);
    copy();
    TP_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    compare_windows(host_->get(), device_buffer_.get(), bytes_, name());
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
    const auto size = static_cast<std::size_t>(bytes_);
    if (dir_ == TransferDir::h2d)
      TP_CUDA_CHECK(cudaMemcpyAsync(device_buffer_.get(), host_->get(), size,
                                    cudaMemcpyHostToDevice, stream_.get()));
    else
      TP_CUDA_CHECK(cudaMemcpyAsync(host_->get(), device_buffer_.get(), size,
                                    cudaMemcpyDeviceToHost, stream_.get()));
  }

  int device_;
  TransferDir dir_;
  bool pinned_;
  std::int64_t bytes_;
  int inner_;
  Stream stream_;
  std::optional<EventTimer> timer_;
  DeviceBuffer device_buffer_;
  std::optional<HostBuffer> host_;
};

// H2D on one stream and D2H on another, both from pinned memory, started and finished together.
class BidirectionalKernel final : public Kernel {
 public:
  BidirectionalKernel(const DeviceFacts& device, std::int64_t bytes_each_way)
      : device_(device.index), bytes_(bytes_each_way) {
    if (bytes_ <= 0) throw InputError("bidirectional transfer: the size must be positive");
    use_device(device_);
    require_device_bytes(2 * bytes_, name());
    up_ = make_stream();
    down_ = make_stream();
    timer_.emplace();
    forked_ = make_event();
    joined_ = make_event();
    up_device_ = make_device_buffer(bytes_);
    down_device_ = make_device_buffer(bytes_);
    up_host_ = make_pinned_buffer(bytes_);
    down_host_ = make_pinned_buffer(bytes_);
    std::memset(down_host_.get(), 0, static_cast<std::size_t>(bytes_));
    fill_host_random(up_host_.as<unsigned char>(), up_device_, bytes_, 51, up_.get());
    fill_random(up_device_.get(), Elem::int8, bytes_, 52, up_.get());
    fill_random(down_device_.get(), Elem::int8, bytes_, 53, up_.get());
    TP_CUDA_CHECK(cudaStreamSynchronize(up_.get()));
  }

  std::string name() const override {
    return fmt::format("transfer bidirectional pinned {} each way",
                       format_bytes(static_cast<double>(bytes_)));
  }
  double flops() const override { return 0; }
  double bytes() const override { return 2.0 * static_cast<double>(bytes_); }
  std::string impl() const override { return "cudaMemcpyAsync h2d and d2h on two streams"; }

  void check() override {
    use_device(device_);
    run();
    TP_CUDA_CHECK(cudaStreamSynchronize(up_.get()));
    compare_windows(up_host_.as<unsigned char>(), up_device_.get(), bytes_, name() + " (h2d)");
    compare_windows(down_host_.as<unsigned char>(), down_device_.get(), bytes_, name() + " (d2h)");
  }

  double run_s() override {
    use_device(device_);
    timer_->start(up_.get());
    run();
    timer_->stop(up_.get());
    return timer_->elapsed_s();
  }

 private:
  // The timed region is on `up_`: `down_` forks from it and joins back before the stop event.
  void run() {
    const auto size = static_cast<std::size_t>(bytes_);
    TP_CUDA_CHECK(cudaEventRecord(forked_.get(), up_.get()));
    TP_CUDA_CHECK(cudaStreamWaitEvent(down_.get(), forked_.get(), 0));
    TP_CUDA_CHECK(
        cudaMemcpyAsync(up_device_.get(), up_host_.get(), size, cudaMemcpyHostToDevice, up_.get()));
    TP_CUDA_CHECK(cudaMemcpyAsync(down_host_.get(), down_device_.get(), size,
                                  cudaMemcpyDeviceToHost, down_.get()));
    TP_CUDA_CHECK(cudaEventRecord(joined_.get(), down_.get()));
    TP_CUDA_CHECK(cudaStreamWaitEvent(up_.get(), joined_.get(), 0));
  }

  int device_;
  std::int64_t bytes_;
  Stream up_, down_;
  std::optional<EventTimer> timer_;
  Event forked_, joined_;
  DeviceBuffer up_device_, down_device_;
  PinnedBuffer up_host_, down_host_;
};

}  // namespace

std::unique_ptr<Kernel> make_transfer_kernel(const DeviceFacts& device, TransferDir dir,
                                             bool pinned, std::int64_t bytes) {
  return std::make_unique<TransferKernel>(device, dir, pinned, bytes);
}

std::unique_ptr<Kernel> make_bidirectional_kernel(const DeviceFacts& device,
                                                  std::int64_t bytes_each_way) {
  return std::make_unique<BidirectionalKernel>(device, bytes_each_way);
}

}  // namespace truepeak::cuda_detail
