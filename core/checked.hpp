// Checked integer arithmetic for sizes: shape products, element counts, window arithmetic. A
// size past 64 bits comes from bad input (a dimension near 2^63, a batch of 10^18); wrapped, it
// would pass as a result (negative FLOPs, a model that "fits"), so an overflow is an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/error.hpp"

namespace truepeak {

// A size that does not fit 64 bits: an input error (a dimension, batch or sequence length too
// large). Its message names the quantity; callers that know the op add it.
class OverflowError : public InputError {
 public:
  using InputError::InputError;
};

inline std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<std::int64_t> checked_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The throwing forms: `what` names the quantity ("the element count of [N,3,224,224]").
inline std::int64_t add_or_throw(std::int64_t a, std::int64_t b, const std::string& what) {
  if (const auto r = checked_add(a, b)) return *r;
  throw OverflowError(what + ": overflows 64 bits");
}

inline std::int64_t mul_or_throw(std::int64_t a, std::int64_t b, const std::string& what) {
  if (const auto r = checked_mul(a, b)) return *r;
  throw OverflowError(what + ": overflows 64 bits");
}

}  // namespace truepeak
