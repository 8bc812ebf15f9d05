// Internal factories of the CUDA backend's kernels, one source file each. Host header.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/backend.hpp"

namespace truepeak::cuda_detail {

class NvmlMonitor;  // kernels/cuda/nvml.hpp

// What the kernels need to know about their device.
struct DeviceFacts {
  int index = 0;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  std::int64_t l2_bytes = 0;
  std::string name;
  std::shared_ptr<const NvmlMonitor> monitor;  // clocks and power while kernels run
  int cc() const { return cc_major * 10 + cc_minor; }
};

DeviceDescription describe_device(int index, DeviceFacts& facts);

// One cuBLASLt handle per backend, shared by its GEMM kernels.
class LtContext;
std::shared_ptr<LtContext> make_lt_context(int device);
std::unique_ptr<Kernel> make_gemm_kernel(const DeviceFacts& device, std::shared_ptr<LtContext> lt,
                                         const GemmShape& shape);

// One cuDNN handle per backend, shared by its convolution kernels (creating one loads cuDNN's
// libraries and takes a while). Absent when the build has no cuDNN.
class CudnnContext;
std::shared_ptr<CudnnContext> make_cudnn_context(int device);
std::unique_ptr<Kernel> make_conv_kernel(const DeviceFacts& device,
                                         std::shared_ptr<CudnnContext> cudnn,
                                         const ConvShape& shape, ConvLayout layout);
std::optional<std::string> cudnn_version();  // of the library loaded at run time

std::unique_ptr<Kernel> make_stream_kernel(const DeviceFacts& device, StreamOp op,
                                           std::int64_t bytes);
std::unique_ptr<Kernel> make_device_copy_kernel(const DeviceFacts& device, std::int64_t bytes);
std::unique_ptr<Kernel> make_fma_kernel(const DeviceFacts& device, DType dtype);
std::unique_ptr<Kernel> make_sentinel_kernel(const DeviceFacts& device);
std::unique_ptr<Kernel> make_launch_kernel(const DeviceFacts& device, bool from_graph);
std::unique_ptr<Kernel> make_transfer_kernel(const DeviceFacts& device, TransferDir dir,
                                             bool pinned, std::int64_t bytes);
std::unique_ptr<Kernel> make_bidirectional_kernel(const DeviceFacts& device,
                                                  std::int64_t bytes_each_way);

// Bytes per second of a PCIe link of this generation and width after line encoding
// (8b/10b for gen 1-2, 128b/130b for gen 3-5, FLIT for gen 6); nullopt for an unknown generation.
std::optional<double> pcie_link_Bps(int generation, int width);

}  // namespace truepeak::cuda_detail
