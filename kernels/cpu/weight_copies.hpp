// Cold weights for a oneDNN primitive: identical copies of its weights in one buffer spanning a
// given number of bytes, used one per call in turn, so that every call finds its weights outside
// the caches, as a layer does when the rest of the model ran since its last call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "kernels/cpu/aligned_buffer.hpp"
#include "kernels/cpu/onednn_kernels.hpp"

namespace truepeak::cpu {

class WeightCopies {
 public:
  static constexpr std::size_t kMaxCopies = 4096;

  WeightCopies() = default;
  // `span_bytes` <= 0: the weights alone, warm from the previous call.
  WeightCopies(const OnednnContext& context, const dnnl::memory& weights, std::int64_t span_bytes);

  bool cold() const { return copies_.size() > 1; }
  std::size_t size() const { return copies_.size(); }
  // The copy for the next call.
  const dnnl::memory& next() {
    const dnnl::memory& m = copies_[next_];
    next_ = (next_ + 1) % copies_.size();
    return m;
  }
  // Makes the next call use the last copy (the original when there is no other): the output
  // check then reads weights that went through the copying.
  void next_is_last() { next_ = copies_.size() - 1; }

 private:
  AlignedBuffer<std::byte> slab_;      // the copies after the original, `stride` bytes apart
  std::vector<dnnl::memory> copies_;  // the original and views of its copies
  std::size_t next_ = 0;
};

}  // namespace truepeak::cpu
