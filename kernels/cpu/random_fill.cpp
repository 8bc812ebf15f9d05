#include "kernels/cpu/random_fill.hpp"

#include <cstddef>

namespace truepeak::cpu {

void fill_random(std::span<float> out, std::uint64_t seed) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<float>(uniform_pm1(seed, i));
  }
}

void fill_random_bf16(std::span<std::uint16_t> out, std::uint64_t seed) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint16_t value = f32_to_bf16(static_cast<float>(uniform_pm1(seed, i)));
    if ((value & 0x7fffU) == 0) {
      value = 0x3f80;  // a value that rounded to zero becomes 1.0
    }
    out[i] = value;
  }
}

void fill_random_s8(std::span<std::int8_t> out, std::uint64_t seed, int range) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto draw = static_cast<int>(mix64(seed * 0x100000001b3ULL + i) % (2U * range));
    // 0..2r-1 -> -r..-1, 1..r
    out[i] = static_cast<std::int8_t>(draw < range ? draw - range : draw - range + 1);
  }
}

}  // namespace truepeak::cpu
