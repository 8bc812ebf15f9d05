// Known tensors' elements: 16-bit floats, each element type's rounding and range, TensorProto I/O.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/checked.hpp"
#include "estimate/onnx_shape_eval_detail.hpp"

namespace truepeak::estimate::onnx_detail {
namespace shape_eval {
namespace {

// float32 <-> the 16-bit formats, for values stored as FLOAT16/BFLOAT16.
double half_to_double(std::uint16_t h) {
  const int sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double v = 0;
  if (exponent == 0)
    v = std::ldexp(mantissa, -24);
  else if (exponent == 31)
    v = mantissa ? std::numeric_limits<double>::quiet_NaN()
                 : std::numeric_limits<double>::infinity();
  else
    v = std::ldexp(mantissa + 1024, exponent - 25);
  return sign ? -v : v;
}

std::uint16_t double_to_half(double v) {
  const float f = static_cast<float>(v);
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000);
  const int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  const std::uint32_t mantissa = bits & 0x7fffff;
  if (std::isnan(f)) return static_cast<std::uint16_t>(sign | 0x7e00);
  if (exponent >= 31) return static_cast<std::uint16_t>(sign | 0x7c00);
  if (exponent <= 0) {
    if (exponent < -10) return sign;
    const std::uint32_t m = (mantissa | 0x800000) >> (1 - exponent);
    return static_cast<std::uint16_t>(sign | ((m + 0x1000) >> 13));
  }
  return static_cast<std::uint16_t>(sign | (exponent << 10) | ((mantissa + 0x1000) >> 13));
}

double bfloat_to_double(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::uint16_t double_to_bfloat(double v) {
  const float f = static_cast<float>(v);
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  return static_cast<std::uint16_t>(bits >> 16);
}

std::optional<std::int64_t> fit_integer(std::int32_t type, std::int64_t v) {
  switch (type) {
    case T::BOOL:
      return v != 0 ? 1 : 0;
    case T::INT8:
      return v >= INT8_MIN && v <= INT8_MAX ? std::optional(v) : std::nullopt;
    case T::UINT8:
      return v >= 0 && v <= UINT8_MAX ? std::optional(v) : std::nullopt;
    case T::INT16:
      return v >= INT16_MIN && v <= INT16_MAX ? std::optional(v) : std::nullopt;
    case T::UINT16:
      return v >= 0 && v <= UINT16_MAX ? std::optional(v) : std::nullopt;
    case T::INT32:
      return v >= INT32_MIN && v <= INT32_MAX ? std::optional(v) : std::nullopt;
    case T::UINT32:
      return v >= 0 && v <= static_cast<std::int64_t>(UINT32_MAX) ? std::optional(v) : std::nullopt;
    case T::UINT64:
      return v >= 0 ? std::optional(v) : std::nullopt;
    default:
      return v;
  }
}

}  // namespace

double round_to(std::int32_t type, double v) {
  if (type == T::FLOAT) return static_cast<double>(static_cast<float>(v));
  if (type == T::FLOAT16) return half_to_double(double_to_half(v));
  if (type == T::BFLOAT16) return bfloat_to_double(double_to_bfloat(v));
  return v;
}

Num element(const Known& t, std::size_t i) {
  return t.is_real() ? real_num(t.reals[i]) : int_num(t.ints[i]);
}

bool append(Known& out, const Num& v) {
  if (out.is_real()) {
    out.reals.push_back(round_to(out.type, v.as_real()));
    return true;
  }
  std::int64_t i = v.i;
  if (v.real) {
    if (out.type == T::BOOL) {
      i = v.r != 0;
    } else {
      // Cast from floating point truncates toward zero; a value without an int64 has no result.
      if (!std::isfinite(v.r) || v.r >= 9.2233720368547758e18 || v.r < -9.2233720368547758e18)
        return false;
      i = static_cast<std::int64_t>(std::trunc(v.r));
    }
  }
  const auto fitted = fit_integer(out.type, i);
  if (!fitted) return false;
  out.ints.push_back(*fitted);
  return true;
}

}  // namespace shape_eval

using namespace shape_eval;

bool is_real_type(std::int32_t type) {
  return type == T::FLOAT || type == T::DOUBLE || type == T::FLOAT16 || type == T::BFLOAT16;
}

bool is_integer_type(std::int32_t type) {
  return type == T::INT64 || type == T::INT32 || type == T::INT16 || type == T::INT8 ||
         type == T::UINT8 || type == T::UINT16 || type == T::UINT32 || type == T::UINT64;
}

bool is_integer_or_bool_type(std::int32_t type) { return is_integer_type(type) || type == T::BOOL; }

bool Known::is_real() const { return is_real_type(type); }

std::optional<std::int64_t> element_count(const std::vector<std::int64_t>& dims) {
  std::optional<std::int64_t> n = 1;
  for (const auto d : dims) {
    if (d < 0 || !n) return std::nullopt;
    n = checked_mul(*n, d);
  }
  return n;
}

// One element of raw tensor data, read as its type (unaligned: memcpy).
template <class V>
V load(const char* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::optional<Known> known_from_proto(const onnx::TensorProto& t) {
  const auto type = t.data_type();
  if ((!is_real_type(type) && !is_integer_or_bool_type(type)) || t.data_location() == T::EXTERNAL)
    return std::nullopt;
  Known out;
  out.type = type;
  out.dims.assign(t.dims().begin(), t.dims().end());
  const auto count = element_count(out.dims);
  if (!count || *count > kMaxFoldElements) return std::nullopt;
  const auto n = static_cast<std::size_t>(*count);
  const auto push = [&](Num v) { return append(out, v); };
  if (!t.raw_data().empty()) {
    const auto& raw = t.raw_data();
    const std::size_t width =
        type == T::INT64 || type == T::UINT64 || type == T::DOUBLE                           ? 8
        : type == T::INT32 || type == T::UINT32 || type == T::FLOAT                          ? 4
        : type == T::INT16 || type == T::UINT16 || type == T::FLOAT16 || type == T::BFLOAT16 ? 2
                                                                                             : 1;
    if (raw.size() != n * width) return std::nullopt;
    for (std::size_t i = 0; i < n; ++i) {
      const char* p = raw.data() + i * width;
      bool ok = true;
      switch (type) {
        case T::INT64: {
          const auto v = load<std::int64_t>(p);
          ok = push(int_num(v));
          break;
        }
        case T::UINT64: {
          const auto v = load<std::uint64_t>(p);
          ok = v <= INT64_MAX && push(int_num(static_cast<std::int64_t>(v)));
          break;
        }
        case T::INT32: {
          const auto v = load<std::int32_t>(p);
          ok = push(int_num(v));
          break;
        }
        case T::UINT32: {
          const auto v = load<std::uint32_t>(p);
          ok = push(int_num(v));
          break;
        }
        case T::INT16: {
          const auto v = load<std::int16_t>(p);
          ok = push(int_num(v));
          break;
        }
        case T::UINT16: {
          const auto v = load<std::uint16_t>(p);
          ok = push(int_num(v));
          break;
        }
        case T::INT8:
          ok = push(int_num(static_cast<signed char>(*p)));
          break;
        case T::UINT8:
        case T::BOOL:
          ok = push(int_num(static_cast<unsigned char>(*p)));
          break;
        case T::DOUBLE: {
          const auto v = load<double>(p);
          ok = push(real_num(v));
          break;
        }
        case T::FLOAT: {
          const auto v = load<float>(p);
          ok = push(real_num(v));
          break;
        }
        case T::FLOAT16: {
          const auto v = load<std::uint16_t>(p);
          ok = push(real_num(half_to_double(v)));
          break;
        }
        case T::BFLOAT16: {
          const auto v = load<std::uint16_t>(p);
          ok = push(real_num(bfloat_to_double(v)));
          break;
        }
        default:
          ok = false;
      }
      if (!ok) return std::nullopt;
    }
  } else {
    bool ok = true;
    switch (type) {
      case T::INT64:
        for (auto v : t.int64_data()) ok = ok && push(int_num(v));
        break;
      case T::UINT32:
      case T::UINT64:
        for (auto v : t.uint64_data())
          ok = ok && v <= INT64_MAX && push(int_num(static_cast<std::int64_t>(v)));
        break;
      case T::FLOAT:
        for (auto v : t.float_data()) ok = ok && push(real_num(v));
        break;
      case T::DOUBLE:
        for (auto v : t.double_data()) ok = ok && push(real_num(v));
        break;
      case T::FLOAT16:
        for (auto v : t.int32_data())
          ok = ok && push(real_num(half_to_double(static_cast<std::uint16_t>(v))));
        break;
      case T::BFLOAT16:
        for (auto v : t.int32_data())
          ok = ok && push(real_num(bfloat_to_double(static_cast<std::uint16_t>(v))));
        break;
      default:
        for (auto v : t.int32_data()) ok = ok && push(int_num(v));
        break;
    }
    if (!ok) return std::nullopt;
  }
  if (out.size() != n) return std::nullopt;
  return out;
}

onnx::TensorProto known_to_proto(const Known& value, const std::string& name) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(value.type);
  for (const auto d : value.dims) t.add_dims(d);
  switch (value.type) {
    case T::INT64:
      for (auto v : value.ints) t.add_int64_data(v);
      break;
    case T::UINT32:
    case T::UINT64:
      for (auto v : value.ints) t.add_uint64_data(static_cast<std::uint64_t>(v));
      break;
    case T::FLOAT:
      for (auto v : value.reals) t.add_float_data(static_cast<float>(v));
      break;
    case T::DOUBLE:
      for (auto v : value.reals) t.add_double_data(v);
      break;
    case T::FLOAT16:
      for (auto v : value.reals) t.add_int32_data(double_to_half(v));
      break;
    case T::BFLOAT16:
      for (auto v : value.reals) t.add_int32_data(double_to_bfloat(v));
      break;
    default:
      for (auto v : value.ints) t.add_int32_data(static_cast<std::int32_t>(v));
      break;
  }
  return t;
}

std::string describe(const Known& value) {
  if (value.size() > 8) {
    return fmt::format(
        "{} values [{}]",
        onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(value.type)),
        fmt::join(value.dims, ","));
  }
  if (value.is_real()) return fmt::format("[{}]", fmt::join(value.reals, ", "));
  return fmt::format("[{}]", fmt::join(value.ints, ", "));
}

}  // namespace truepeak::estimate::onnx_detail
