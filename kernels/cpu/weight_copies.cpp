#include "kernels/cpu/weight_copies.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/dnnl_check.hpp"

namespace truepeak::cpu {

WeightCopies::WeightCopies(const OnednnContext& context, const dnnl::memory& weights,
                           std::int64_t span_bytes) {
  copies_.push_back(weights);
  const std::size_t bytes = weights.get_desc().get_size();
  const std::size_t count =
      span_bytes > 0 && bytes > 0
          ? std::min(kMaxCopies, static_cast<std::size_t>(span_bytes) / bytes + 1)
          : 1;
  if (count < 2) return;
  // Each copy starts on a cache line.
  constexpr std::size_t align = AlignedBuffer<std::byte>::kAlignment;
  const std::size_t stride = (bytes + align - 1) / align * align;
  slab_ = AlignedBuffer<std::byte>(stride * (count - 1));
  for (std::size_t i = 0; i + 1 < count; ++i) {
    std::byte* at = slab_.data() + i * stride;
    std::memcpy(at, weights.get_data_handle(), bytes);
    copies_.push_back(TRUEPEAK_DNNL(dnnl::memory(weights.get_desc(), context.engine, at)));
  }
}

}  // namespace truepeak::cpu
