#include "kernels/cuda/cuda_check.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "core/error.hpp"

namespace truepeak::cuda_detail {

namespace {
std::string describe(const char* name, const char* text, const char* expr, const char* file,
                     int line) {
  return fmt::format("{}:{}: {} failed: {} ({})", file, line, expr, name, text);
}
}  // namespace

void throw_cuda_error(cudaError_t status, const char* expr, const char* file, int line) {
  throw Error(describe(cudaGetErrorName(status), cudaGetErrorString(status), expr, file, line));
}

void report_cuda_error(cudaError_t status, const char* expr, const char* file, int line) noexcept {
  std::fprintf(stderr, "truepeak: %s:%d: %s failed: %s\n", file, line, expr,
               cudaGetErrorName(status));
}

void throw_cublas_error(cublasStatus_t status, const char* expr, const char* file, int line) {
  throw Error(
      describe(cublasLtGetStatusName(status), cublasLtGetStatusString(status), expr, file, line));
}

void report_cublas_error(cublasStatus_t status, const char* expr, const char* file,
                         int line) noexcept {
  std::fprintf(stderr, "truepeak: %s:%d: %s failed: %s\n", file, line, expr,
               cublasLtGetStatusName(status));
}

}  // namespace truepeak::cuda_detail
