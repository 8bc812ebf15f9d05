// Device allocations are sized from the memory that is free now, never more.
#pragma once

#include <cstdint>
#include <string>

namespace truepeak::cuda_detail {

// Free device memory of the current device, less a margin for the libraries' own allocations
// (cuBLASLt/cuDNN handles, the CUDA context growing).
std::int64_t usable_device_bytes();

// Throws Unsupported, naming `what` and both sizes, when `bytes` do not fit.
void require_device_bytes(std::int64_t bytes, const std::string& what);

}  // namespace truepeak::cuda_detail
