// Move-only owner of one library handle: the release function runs exactly once, and copies
// do not compile (as nvbench's cuda_stream.cuh does with a unique_ptr deleter).
#pragma once

#include <utility>

namespace truepeak {

template <typename Handle, void (*Release)(Handle) noexcept>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(Handle handle) : handle_(handle) {}
  ~UniqueHandle() { reset(); }
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != Handle{}; }
  void reset() noexcept {
    if (handle_ != Handle{}) Release(handle_);
    handle_ = Handle{};
  }

 private:
  Handle handle_{};
};

}  // namespace truepeak
