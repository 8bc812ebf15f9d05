// Random inputs for the measured kernels (never zeros: zeros run faster on some hardware and hide
// wrong indexing). A small counter-based generator keeps filling cheap and reproducible, and lets
// threads fill their own parts of a buffer independently.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

namespace truepeak::cpu {

// splitmix64: one 64-bit output per counter value.
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1), never exactly 0 (the lowest bit is forced on before scaling).
inline double uniform_pm1(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t bits = (mix64(seed * 0x100000001b3ULL + index) >> 11) | 1ULL;
  return static_cast<double>(bits) * (2.0 / 9007199254740992.0) - 1.0;
}

// bf16 is the upper half of an IEEE f32; round to nearest even (inputs here are finite).
inline std::uint16_t f32_to_bf16(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  bits += 0x7fffU + ((bits >> 16) & 1U);
  return static_cast<std::uint16_t>(bits >> 16);
}

inline float bf16_to_f32(std::uint16_t value) {
  const std::uint32_t bits = static_cast<std::uint32_t>(value) << 16;
  float result = 0;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

void fill_random(std::span<float> out, std::uint64_t seed);
// bf16 values of uniform [-1, 1) numbers, never zero.
void fill_random_bf16(std::span<std::uint16_t> out, std::uint64_t seed);
// Integers in [-range, range] without 0, so products stay far from int32 overflow.
void fill_random_s8(std::span<std::int8_t> out, std::uint64_t seed, int range = 8);

}  // namespace truepeak::cpu
