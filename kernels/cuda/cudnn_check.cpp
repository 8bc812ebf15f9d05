#include "kernels/cuda/cudnn_check.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "core/error.hpp"

namespace truepeak::cuda_detail {

void throw_cudnn_error(cudnnStatus_t status, const char* expr, const char* file, int line) {
  throw Error(fmt::format("{}:{}: {} failed: {}", file, line, expr, cudnnGetErrorString(status)));
}

void report_cudnn_error(cudnnStatus_t status, const char* expr, const char* file,
                        int line) noexcept {
  std::fprintf(stderr, "truepeak: %s:%d: %s failed: %s\n", file, line, expr,
               cudnnGetErrorString(status));
}

}  // namespace truepeak::cuda_detail
