// The CPU backend: oneDNN matmul/convolution and truepeak's own OpenMP kernels (STREAM, FMA).
#pragma once

#include <memory>

#include "core/backend.hpp"

namespace truepeak {

struct CpuBackendOptions {
  int threads = 0;  // 0: all cores available to this process
};

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options);

}  // namespace truepeak
