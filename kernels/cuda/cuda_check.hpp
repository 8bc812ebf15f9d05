// Status checks for the CUDA runtime and cuBLASLt: each macro throws truepeak::Error with
// file:line, the expression and the library's error name; the *_NOTHROW twins only report to
// stderr, for destructors. cuDNN's macro lives in cudnn_check.hpp (cuDNN is optional).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace truepeak::cuda_detail {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* expr, const char* file,
                                   int line);
void report_cuda_error(cudaError_t status, const char* expr, const char* file, int line) noexcept;
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* expr, const char* file,
                                     int line);
void report_cublas_error(cublasStatus_t status, const char* expr, const char* file,
                         int line) noexcept;

}  // namespace truepeak::cuda_detail

#define TP_CUDA_CHECK(expr)                                                             \
  do {                                                                                  \
    const cudaError_t tp_status_ = (expr);                                              \
    if (tp_status_ != cudaSuccess)                                                      \
      ::truepeak::cuda_detail::throw_cuda_error(tp_status_, #expr, __FILE__, __LINE__); \
  } while (0)

#define TP_CUDA_CHECK_NOTHROW(expr)                                                      \
  do {                                                                                   \
    const cudaError_t tp_status_ = (expr);                                               \
    if (tp_status_ != cudaSuccess)                                                       \
      ::truepeak::cuda_detail::report_cuda_error(tp_status_, #expr, __FILE__, __LINE__); \
  } while (0)

// After every kernel launch: launch errors are only visible through cudaGetLastError.
#define TP_CUDA_CHECK_LAUNCH() TP_CUDA_CHECK(cudaGetLastError())

#define TP_CUBLAS_CHECK(expr)                                                             \
  do {                                                                                    \
    const cublasStatus_t tp_status_ = (expr);                                             \
    if (tp_status_ != CUBLAS_STATUS_SUCCESS)                                              \
      ::truepeak::cuda_detail::throw_cublas_error(tp_status_, #expr, __FILE__, __LINE__); \
  } while (0)

#define TP_CUBLAS_CHECK_NOTHROW(expr)                                                      \
  do {                                                                                     \
    const cublasStatus_t tp_status_ = (expr);                                              \
    if (tp_status_ != CUBLAS_STATUS_SUCCESS)                                               \
      ::truepeak::cuda_detail::report_cublas_error(tp_status_, #expr, __FILE__, __LINE__); \
  } while (0)
