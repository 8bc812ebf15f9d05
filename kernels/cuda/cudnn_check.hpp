// Status check for cuDNN, same contract as cuda_check.hpp: throws truepeak::Error with
// file:line, the expression and cuDNN's error name; the NOTHROW twin is for destructors.
#pragma once

#include <cudnn.h>

namespace truepeak::cuda_detail {

[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* expr, const char* file,
                                    int line);
void report_cudnn_error(cudnnStatus_t status, const char* expr, const char* file,
                        int line) noexcept;

}  // namespace truepeak::cuda_detail

#define TP_CUDNN_CHECK(expr)                                                             \
  do {                                                                                   \
    const cudnnStatus_t tp_status_ = (expr);                                             \
    if (tp_status_ != CUDNN_STATUS_SUCCESS)                                              \
      ::truepeak::cuda_detail::throw_cudnn_error(tp_status_, #expr, __FILE__, __LINE__); \
  } while (0)

#define TP_CUDNN_CHECK_NOTHROW(expr)                                                      \
  do {                                                                                    \
    const cudnnStatus_t tp_status_ = (expr);                                              \
    if (tp_status_ != CUDNN_STATUS_SUCCESS)                                               \
      ::truepeak::cuda_detail::report_cudnn_error(tp_status_, #expr, __FILE__, __LINE__); \
  } while (0)
