// Move-only owners of CUDA runtime and cuBLASLt objects, and a timer on CUDA events.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/unique_handle.hpp"

namespace truepeak {

namespace cuda_detail {
void release_stream(cudaStream_t stream) noexcept;
void release_event(cudaEvent_t event) noexcept;
void release_device_memory(void* ptr) noexcept;
void release_pinned_memory(void* ptr) noexcept;
void release_pageable_memory(void* ptr) noexcept;
void release_graph(cudaGraph_t graph) noexcept;
void release_graph_exec(cudaGraphExec_t exec) noexcept;
void release_lt_handle(cublasLtHandle_t handle) noexcept;
void release_lt_matmul_desc(cublasLtMatmulDesc_t desc) noexcept;
void release_lt_layout(cublasLtMatrixLayout_t layout) noexcept;
void release_lt_preference(cublasLtMatmulPreference_t pref) noexcept;
}  // namespace cuda_detail

using Stream = UniqueHandle<cudaStream_t, cuda_detail::release_stream>;
using Event = UniqueHandle<cudaEvent_t, cuda_detail::release_event>;
using Graph = UniqueHandle<cudaGraph_t, cuda_detail::release_graph>;
using GraphExec = UniqueHandle<cudaGraphExec_t, cuda_detail::release_graph_exec>;
using LtHandle = UniqueHandle<cublasLtHandle_t, cuda_detail::release_lt_handle>;
using LtMatmulDesc = UniqueHandle<cublasLtMatmulDesc_t, cuda_detail::release_lt_matmul_desc>;
using LtLayout = UniqueHandle<cublasLtMatrixLayout_t, cuda_detail::release_lt_layout>;
using LtPreference = UniqueHandle<cublasLtMatmulPreference_t, cuda_detail::release_lt_preference>;

Stream make_stream();  // non-blocking: never serialises with the legacy default stream
Event make_event();
LtHandle make_lt_handle();

// Memory of `bytes` bytes; the pointer's type says where it lives.
template <void (*Release)(void*) noexcept>
class Memory {
 public:
  Memory() = default;
  Memory(void* ptr, std::int64_t bytes) : ptr_(ptr), bytes_(bytes) {}
  void* get() const { return ptr_.get(); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_.get());
  }
  std::int64_t bytes() const { return bytes_; }

 private:
  UniqueHandle<void*, Release> ptr_;
  std::int64_t bytes_ = 0;
};

using DeviceBuffer = Memory<cuda_detail::release_device_memory>;
using PinnedBuffer = Memory<cuda_detail::release_pinned_memory>;      // cudaHostAlloc
using PageableBuffer = Memory<cuda_detail::release_pageable_memory>;  // ordinary host memory

DeviceBuffer make_device_buffer(std::int64_t bytes);
PinnedBuffer make_pinned_buffer(std::int64_t bytes);
// Page-aligned, with every page touched, so first-touch faults stay out of the timings.
PageableBuffer make_pageable_buffer(std::int64_t bytes);

// Makes `device` current for the calling thread; kernels call it before any CUDA work, since
// the calibrate driver may use several GPUs from one thread.
void use_device(int device);

// Times work queued on one stream between start() and stop(); elapsed_s() waits for it.
class EventTimer {
 public:
  EventTimer() : start_(make_event()), stop_(make_event()) {}
  void start(cudaStream_t stream);
  void stop(cudaStream_t stream);
  double elapsed_s() const;

 private:
  Event start_, stop_;
};

// Seconds per call of `call()`: the fastest of `batches` batches of `calls` calls queued on
// `stream` between the timer's events. Candidate timing of library kernels.
template <typename Call>
double fastest_batch_s(EventTimer& timer, cudaStream_t stream, int calls, int batches, Call&& call) {
  double best = 0;
  for (int b = 0; b < batches; ++b) {
    timer.start(stream);
    for (int i = 0; i < calls; ++i) call();
    timer.stop(stream);
    const double call_s = std::max(timer.elapsed_s() / calls, 1e-7);
    best = b == 0 ? call_s : std::min(best, call_s);
  }
  return best;
}

}  // namespace truepeak
