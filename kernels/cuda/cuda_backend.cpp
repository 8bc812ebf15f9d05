// The CUDA backend: describes one GPU and hands out its kernels.
#include "kernels/cuda/cuda_backend.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "kernels/cuda/cuda_kernels.hpp"

namespace truepeak {

namespace {

using namespace cuda_detail;

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int index) : description_(describe_device(index, facts_)) {
    lt_ = make_lt_context(index);
  }

  const DeviceDescription& describe() const override { return description_; }

  std::unique_ptr<Kernel> gemm(const GemmShape& shape) override {
    return make_gemm_kernel(facts_, lt_, shape);
  }

  std::unique_ptr<Kernel> conv(const ConvShape& shape, ConvLayout layout) override {
#if defined(TRUEPEAK_HAVE_CUDNN)
    // Created on first use: loading cuDNN takes a while and not every run measures convolutions.
    if (!cudnn_) cudnn_ = make_cudnn_context(facts_.index);
    return make_conv_kernel(facts_, cudnn_, shape, layout);
#else
    (void)layout;
    throw Unsupported(fmt::format(
        "conv {}: truepeak was built without cuDNN (set CUDNN_ROOT and rebuild)", shape.str()));
#endif
  }

  std::unique_ptr<Kernel> stream(StreamOp op, std::int64_t bytes) override {
    return make_stream_kernel(facts_, op, bytes);
  }
  std::unique_ptr<Kernel> fma(DType dtype) override { return make_fma_kernel(facts_, dtype); }
  std::unique_ptr<Kernel> tiny_op() override { return make_launch_kernel(facts_, false); }
  std::unique_ptr<Kernel> graph_tiny_op() override { return make_launch_kernel(facts_, true); }
  std::unique_ptr<Kernel> transfer(TransferDir dir, bool pinned, std::int64_t bytes) override {
    return make_transfer_kernel(facts_, dir, pinned, bytes);
  }
  std::unique_ptr<Kernel> transfer_bidirectional(std::int64_t bytes_each_way) override {
    return make_bidirectional_kernel(facts_, bytes_each_way);
  }
  std::unique_ptr<Kernel> device_copy(std::int64_t bytes) override {
    return make_device_copy_kernel(facts_, bytes);
  }
  std::unique_ptr<Kernel> sentinel() override { return make_sentinel_kernel(facts_); }

 private:
  DeviceFacts facts_;
  DeviceDescription description_;
  std::shared_ptr<LtContext> lt_;
  std::shared_ptr<CudnnContext> cudnn_;
};

}  // namespace

#if !defined(TRUEPEAK_HAVE_CUDNN)
std::optional<std::string> cuda_detail::cudnn_version() { return std::nullopt; }
#endif

std::unique_ptr<Backend> make_cuda_backend(int device_index) {
  const CudaDeviceCount devices = cuda_device_count();
  if (devices.count == 0)
    throw Unsupported(
        fmt::format("cuda:{}: no CUDA device is usable: {}", device_index, devices.reason));
  if (device_index < 0 || device_index >= devices.count)
    throw Unsupported(fmt::format("cuda:{}: no such device ({} CUDA device{} visible)",
                                  device_index, devices.count, devices.count == 1 ? "" : "s"));
  return std::make_unique<CudaBackend>(device_index);
}

}  // namespace truepeak
