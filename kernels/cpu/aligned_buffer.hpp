// A move-only, 64-byte-aligned (cache line and AVX-512 vector) heap buffer of trivially copyable
// elements. Memory is left untouched on allocation so that the first write decides page placement
// (first touch), which the STREAM kernels rely on. Buffers of 2 MiB and more are aligned to 2 MiB
// and asked to be backed by transparent huge pages (where the kernel offers them on request):
// fewer TLB misses while streaming through main memory.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>

#include <sys/mman.h>

namespace truepeak::cpu {

template <typename T>
class AlignedBuffer {
 public:
  static constexpr std::size_t kAlignment = 64;
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;

  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t count) : count_(count) {
    if (count == 0) {
      return;
    }
    // aligned_alloc wants the size to be a multiple of the alignment.
    const std::size_t wanted = count * sizeof(T);
    const std::size_t align = wanted >= kHugePage ? kHugePage : kAlignment;
    const std::size_t bytes = (wanted + align - 1) / align * align;
    data_.reset(static_cast<T*>(std::aligned_alloc(align, bytes)));
    if (!data_) {
      throw std::bad_alloc();
    }
#ifdef MADV_HUGEPAGE
    if (align == kHugePage) {
      ::madvise(data_.get(), bytes, MADV_HUGEPAGE);  // advice only: without THP nothing changes
    }
#endif
  }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return count_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  std::span<T> span() { return {data_.get(), count_}; }
  std::span<const T> span() const { return {data_.get(), count_}; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T[], Free> data_;
  std::size_t count_ = 0;
};

}  // namespace truepeak::cpu
