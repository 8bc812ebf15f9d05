#include "kernels/cuda/cuda_owners.hpp"

#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "kernels/cuda/cuda_check.hpp"

namespace truepeak {

namespace cuda_detail {
void release_stream(cudaStream_t stream) noexcept {
  TP_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream));
}
void release_event(cudaEvent_t event) noexcept { TP_CUDA_CHECK_NOTHROW(cudaEventDestroy(event)); }
void release_device_memory(void* ptr) noexcept { TP_CUDA_CHECK_NOTHROW(cudaFree(ptr)); }
void release_pinned_memory(void* ptr) noexcept { TP_CUDA_CHECK_NOTHROW(cudaFreeHost(ptr)); }
void release_pageable_memory(void* ptr) noexcept { std::free(ptr); }
void release_graph(cudaGraph_t graph) noexcept { TP_CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph)); }
void release_graph_exec(cudaGraphExec_t exec) noexcept {
  TP_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec));
}
void release_lt_handle(cublasLtHandle_t handle) noexcept {
  TP_CUBLAS_CHECK_NOTHROW(cublasLtDestroy(handle));
}
void release_lt_matmul_desc(cublasLtMatmulDesc_t desc) noexcept {
  TP_CUBLAS_CHECK_NOTHROW(cublasLtMatmulDescDestroy(desc));
}
void release_lt_layout(cublasLtMatrixLayout_t layout) noexcept {
  TP_CUBLAS_CHECK_NOTHROW(cublasLtMatrixLayoutDestroy(layout));
}
void release_lt_preference(cublasLtMatmulPreference_t pref) noexcept {
  TP_CUBLAS_CHECK_NOTHROW(cublasLtMatmulPreferenceDestroy(pref));
}
}  // namespace cuda_detail

Stream make_stream() {
  cudaStream_t stream = nullptr;
  TP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return Stream(stream);
}

Event make_event() {
  cudaEvent_t event = nullptr;
  TP_CUDA_CHECK(cudaEventCreate(&event));
  return Event(event);
}

LtHandle make_lt_handle() {
  cublasLtHandle_t handle = nullptr;
  TP_CUBLAS_CHECK(cublasLtCreate(&handle));
  return LtHandle(handle);
}

DeviceBuffer make_device_buffer(std::int64_t bytes) {
  void* ptr = nullptr;
  TP_CUDA_CHECK(cudaMalloc(&ptr, static_cast<std::size_t>(bytes)));
  return DeviceBuffer(ptr, bytes);
}

PinnedBuffer make_pinned_buffer(std::int64_t bytes) {
  void* ptr = nullptr;
  TP_CUDA_CHECK(cudaHostAlloc(&ptr, static_cast<std::size_t>(bytes), cudaHostAllocDefault));
  return PinnedBuffer(ptr, bytes);
}

PageableBuffer make_pageable_buffer(std::int64_t bytes) {
  constexpr std::size_t kPage = 4096;
  const std::size_t rounded = (static_cast<std::size_t>(bytes) + kPage - 1) / kPage * kPage;
  void* ptr = std::aligned_alloc(kPage, rounded);
  if (ptr == nullptr) throw Error("out of host memory allocating a pageable transfer buffer");
  std::memset(ptr, 0, rounded);
  return PageableBuffer(ptr, bytes);
}

void use_device(int device) { TP_CUDA_CHECK(cudaSetDevice(device)); }

void EventTimer::start(cudaStream_t stream) {
  TP_CUDA_CHECK(cudaEventRecord(start_.get(), stream));
}
void EventTimer::stop(cudaStream_t stream) { TP_CUDA_CHECK(cudaEventRecord(stop_.get(), stream)); }

double EventTimer::elapsed_s() const {
  TP_CUDA_CHECK(cudaEventSynchronize(stop_.get()));
  float ms = 0;
  TP_CUDA_CHECK(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace truepeak
