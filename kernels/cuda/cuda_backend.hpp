// The CUDA backend: cuBLASLt GEMM, cuDNN convolution and truepeak's own CUDA kernels. Host
// header: no CUDA includes, so the rest of truepeak compiles without nvcc.
#pragma once

#include <memory>
#include <string>

#include "core/backend.hpp"

namespace truepeak {

struct CudaDeviceCount {
  int count = 0;
  std::string
      reason;  // why there are none (no driver, insufficient driver, no device), if count == 0
};

// Never throws: a machine without a driver or GPU reports 0 with the runtime's reason.
CudaDeviceCount cuda_device_count();

// Throws Unsupported when the device does not exist, Error on a CUDA failure.
std::unique_ptr<Backend> make_cuda_backend(int device_index);

}  // namespace truepeak
