// Load-time evaluation of single ONNX nodes on small known tensors: the operators that exporters
// use to compute shapes (Shape, Gather, Slice, Concat, Reshape, integer and float arithmetic,
// comparisons, Where, Range, ConstantOfShape, Expand, reductions, Cast). Each returns nullopt
// rather than guess: a value it cannot compute exactly leaves the shape to the later steps.
#include "estimate/onnx_shape_eval.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>

#include "core/checked.hpp"

namespace truepeak::estimate::onnx_detail {
namespace {

using Dims = std::vector<std::int64_t>;
using T = onnx::TensorProto;

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

// A value as a tensor of `type` stores it.
double round_to(std::int32_t type, double v) {
  if (type == T::FLOAT) return static_cast<double>(static_cast<float>(v));
  if (type == T::FLOAT16) return half_to_double(double_to_half(v));
  if (type == T::BFLOAT16) return bfloat_to_double(double_to_bfloat(v));
  return v;
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

// One element, integer or real.
struct Num {
  bool real = false;
  std::int64_t i = 0;
  double r = 0;
  double as_real() const { return real ? r : static_cast<double>(i); }
  bool truthy() const { return real ? r != 0 : i != 0; }
};

Num int_num(std::int64_t v) { return Num{false, v, 0}; }
Num real_num(double v) { return Num{true, 0, v}; }

Num element(const Known& t, std::size_t i) {
  return t.is_real() ? real_num(t.reals[i]) : int_num(t.ints[i]);
}

// Appends `v` to `out` as its type holds it; false where it does not fit.
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

std::int64_t attr_int(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.type() == onnx::AttributeProto::INT) return a.i();
  }
  return fallback;
}

std::optional<Dims> attr_ints(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.type() == onnx::AttributeProto::INTS)
      return Dims(a.ints().begin(), a.ints().end());
  }
  return std::nullopt;
}

std::optional<double> attr_float(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.type() == onnx::AttributeProto::FLOAT) return a.f();
  }
  return std::nullopt;
}

const onnx::TensorProto* attr_tensor(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.has_t()) return &a.t();
  }
  return nullptr;
}

// Axis `a` of a rank-`rank` tensor, negative counted from the end; nullopt when out of range.
std::optional<std::int64_t> axis_of(std::int64_t a, std::int64_t rank) {
  if (a < -rank || a >= rank) return std::nullopt;
  return a < 0 ? a + rank : a;
}

std::int64_t rank_of(const Known& t) { return static_cast<std::int64_t>(t.dims.size()); }

// Row-major strides of `dims`.
Dims strides_of(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// An empty tensor of `type` and `dims`, or nullopt when its element count is past the limit.
std::optional<Known> shaped(std::int32_t type, Dims dims) {
  const auto count = element_count(dims);
  if (!count || *count > kMaxFoldElements) return std::nullopt;
  Known out;
  out.type = type;
  out.dims = std::move(dims);
  if (out.is_real())
    out.reals.reserve(static_cast<std::size_t>(*count));
  else
    out.ints.reserve(static_cast<std::size_t>(*count));
  return out;
}

// The output of a gather of elements: `source[k]` for each k in `indices` (positions in `in`).
Known pick(const Known& in, Dims dims, const std::vector<std::int64_t>& indices) {
  Known out;
  out.type = in.type;
  out.dims = std::move(dims);
  for (const auto k : indices) {
    if (in.is_real())
      out.reals.push_back(in.reals[static_cast<std::size_t>(k)]);
    else
      out.ints.push_back(in.ints[static_cast<std::size_t>(k)]);
  }
  return out;
}

// Calls fn(flat index, multi-index) for each element of a tensor of `dims`.
void for_each_index(const Dims& dims, const std::function<void(const Dims&)>& fn) {
  const auto count = element_count(dims).value_or(0);
  Dims index(dims.size(), 0);
  for (std::int64_t flat = 0; flat < count; ++flat) {
    fn(index);
    for (std::size_t a = dims.size(); a-- > 0;) {
      if (++index[a] < dims[a]) break;
      index[a] = 0;
    }
  }
}

// Numpy broadcasting of shapes; nullopt when they do not broadcast.
std::optional<Dims> broadcast_dims(const std::vector<const Dims*>& shapes) {
  std::size_t rank = 0;
  for (const auto* s : shapes) rank = std::max(rank, s->size());
  Dims dims(rank, 1);
  for (const auto* s : shapes) {
    for (std::size_t i = 0; i < s->size(); ++i) {
      auto& d = dims[rank - s->size() + i];
      const auto v = (*s)[i];
      if (d == 1)
        d = v;
      else if (v != 1 && v != d)
        return std::nullopt;
    }
  }
  return dims;
}

using NumFn = std::function<std::optional<Num>(const std::vector<Num>&)>;

// Elementwise over broadcast inputs, writing a tensor of `type`.
std::optional<Known> broadcast(const std::vector<const Known*>& in, std::int32_t type,
                               const NumFn& fn) {
  std::vector<const Dims*> shapes;
  for (const auto* t : in) shapes.push_back(&t->dims);
  const auto dims = broadcast_dims(shapes);
  if (!dims) return std::nullopt;
  auto out = shaped(type, *dims);
  if (!out) return std::nullopt;
  std::vector<Dims> strides;
  for (const auto* t : in) strides.push_back(strides_of(t->dims));
  const std::size_t rank = dims->size();
  std::vector<Num> args(in.size());
  bool ok = true;
  for_each_index(*dims, [&](const Dims& index) {
    if (!ok) return;
    for (std::size_t k = 0; k < in.size(); ++k) {
      const auto& t = *in[k];
      const std::size_t offset = rank - t.dims.size();
      std::int64_t flat = 0;
      for (std::size_t a = 0; a < t.dims.size(); ++a)
        flat += (t.dims[a] == 1 ? 0 : index[offset + a]) * strides[k][a];
      args[k] = element(t, static_cast<std::size_t>(flat));
    }
    const auto v = fn(args);
    ok = v && append(*out, *v);
  });
  if (!ok) return std::nullopt;
  return out;
}

// Integer division truncates; a division by zero in a branch that a Where discards must not stop
// the fold, so it gives 0.
std::optional<std::int64_t> integer_divide(std::int64_t a, std::int64_t b) {
  if (b == 0) return 0;
  if (a == std::numeric_limits<std::int64_t>::min() && b == -1) return std::nullopt;
  return a / b;
}

double real_max(double a, double b) { return std::max(a, b); }
double real_min(double a, double b) { return std::min(a, b); }

template <typename V>
std::optional<V> larger(V a, V b) {
  return std::max(a, b);
}

template <typename V>
std::optional<V> smaller(V a, V b) {
  return std::min(a, b);
}

std::optional<Num> integer_power(std::int64_t base, std::int64_t exponent) {
  if (exponent < 0) return base == 1 ? std::optional(int_num(1)) : std::nullopt;
  std::int64_t r = 1;
  for (std::int64_t k = 0; k < exponent; ++k) {
    const auto next = checked_mul(r, base);
    if (!next) return std::nullopt;
    r = *next;
    if (r == 0 || r == 1) break;
  }
  return int_num(r);
}

// The elementwise operators of shape code: (inputs at least, at most, result type), and the
// function. A result type of -1 is the first input's, BOOL that of a comparison.
struct Elementwise {
  int min_inputs;
  int max_inputs;
  std::int32_t result;  // -1: the type of the first input (of the second for Where)
  std::function<std::optional<Num>(const std::vector<Num>&, const onnx::NodeProto&)> fn;
};

const std::map<std::string, Elementwise>& elementwise_ops() {
  using R = std::optional<Num>;
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  const auto arithmetic = [](auto real_fn, auto int_fn) {
    return [real_fn, int_fn](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
      if (a[0].real || a[1].real) return real_num(real_fn(a[0].as_real(), a[1].as_real()));
      const auto v = int_fn(a[0].i, a[1].i);
      if (!v) return std::nullopt;
      return int_num(*v);
    };
  };
  const auto compare = [](auto cmp) {
    return [cmp](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
      if (a[0].real || a[1].real) return int_num(cmp(a[0].as_real(), a[1].as_real()) ? 1 : 0);
      return int_num(cmp(a[0].i, a[1].i) ? 1 : 0);
    };
  };
  const auto unary_real = [](auto real_fn) {
    return [real_fn](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
      return real_num(real_fn(a[0].as_real()));
    };
  };
  const auto variadic = [](auto real_fn, auto int_fn) {
    return [real_fn, int_fn](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
      Num acc = a[0];
      for (std::size_t k = 1; k < a.size(); ++k) {
        if (acc.real || a[k].real) {
          acc = real_num(real_fn(acc.as_real(), a[k].as_real()));
        } else {
          const auto v = int_fn(acc.i, a[k].i);
          if (!v) return std::nullopt;
          acc = int_num(*v);
        }
      }
      return acc;
    };
  };
  static const std::map<std::string, Elementwise> ops = {
      {"Add", {2, 2, -1, arithmetic(std::plus<double>(), checked_add)}},
      {"Sub", {2, 2, -1, arithmetic(std::minus<double>(), checked_sub)}},
      {"Mul", {2, 2, -1, arithmetic(std::multiplies<double>(), checked_mul)}},
      {"Div", {2, 2, -1, arithmetic(std::divides<double>(), integer_divide)}},
      {"Mod",
       {2, 2, -1,
        [](const std::vector<Num>& a, const onnx::NodeProto& node) -> R {
          const bool fmod = attr_int(node, "fmod", 0) != 0;
          if (a[0].real || a[1].real) {
            const double x = a[0].as_real(), y = a[1].as_real();
            if (fmod) return real_num(std::fmod(x, y));
            double r = std::fmod(x, y);
            if (r != 0 && ((r < 0) != (y < 0))) r += y;
            return real_num(r);
          }
          const std::int64_t x = a[0].i, y = a[1].i;
          if (y == 0 || y == -1) return int_num(0);
          std::int64_t r = x % y;
          // fmod = 0: the remainder takes the divisor's sign, as Python's %.
          if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
          return int_num(r);
        }}},
      {"Pow",
       {2, 2, -1,
        [](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
          if (a[0].real || a[1].real) return real_num(std::pow(a[0].as_real(), a[1].as_real()));
          return integer_power(a[0].i, a[1].i);
        }}},
      {"Max", {1, 64, -1, variadic(real_max, larger<std::int64_t>)}},
      {"Min", {1, 64, -1, variadic(real_min, smaller<std::int64_t>)}},
      {"Sum", {1, 64, -1, variadic(std::plus<double>(), checked_add)}},
      {"Equal", {2, 2, T::BOOL, compare(std::equal_to<>())}},
      {"Less", {2, 2, T::BOOL, compare(std::less<>())}},
      {"Greater", {2, 2, T::BOOL, compare(std::greater<>())}},
      {"LessOrEqual", {2, 2, T::BOOL, compare(std::less_equal<>())}},
      {"GreaterOrEqual", {2, 2, T::BOOL, compare(std::greater_equal<>())}},
      {"And",
       {2, 2, T::BOOL,
        [](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
          return int_num(a[0].truthy() && a[1].truthy());
        }}},
      {"Or",
       {2, 2, T::BOOL,
        [](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
          return int_num(a[0].truthy() || a[1].truthy());
        }}},
      {"Xor",
       {2, 2, T::BOOL,
        [](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
          return int_num(a[0].truthy() != a[1].truthy());
        }}},
      {"Not",
       {1, 1, T::BOOL,
        [](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
          return int_num(!a[0].truthy());
        }}},
      {"Where",
       {3, 3, -1,
        [](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
          return a[0].truthy() ? a[1] : a[2];
        }}},
      {"Neg",
       {1, 1, -1,
        [](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
          if (a[0].real) return real_num(-a[0].r);
          return a[0].i == kMin ? std::nullopt : std::optional(int_num(-a[0].i));
        }}},
      {"Abs",
       {1, 1, -1,
        [](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
          if (a[0].real) return real_num(std::fabs(a[0].r));
          if (a[0].i == kMin) return std::nullopt;
          return int_num(a[0].i < 0 ? -a[0].i : a[0].i);
        }}},
      {"Sign",
       {1, 1, -1,
        [](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
          if (a[0].real) return real_num(a[0].r > 0 ? 1.0 : a[0].r < 0 ? -1.0 : 0.0);
          return int_num(a[0].i > 0 ? 1 : a[0].i < 0 ? -1 : 0);
        }}},
      {"Relu",
       {1, 1, -1,
        [](const std::vector<Num>& a, const onnx::NodeProto&) -> R {
          if (a[0].real) return real_num(std::max(0.0, a[0].r));
          return int_num(std::max<std::int64_t>(0, a[0].i));
        }}},
      {"Floor", {1, 1, -1, unary_real([](double x) { return std::floor(x); })}},
      {"Ceil", {1, 1, -1, unary_real([](double x) { return std::ceil(x); })}},
      // Round halves to even, as ONNX specifies.
      {"Round", {1, 1, -1, unary_real([](double x) { return std::nearbyint(x); })}},
      {"Sqrt", {1, 1, -1, unary_real([](double x) { return std::sqrt(x); })}},
      {"Reciprocal", {1, 1, -1, unary_real([](double x) { return 1.0 / x; })}},
      {"Exp", {1, 1, -1, unary_real([](double x) { return std::exp(x); })}},
      {"Log", {1, 1, -1, unary_real([](double x) { return std::log(x); })}},
  };
  return ops;
}

// The axes a node names (an attribute before the opset that made them an input), normalized to
// `rank`; nullopt when they are not known or out of range. Empty: none given.
std::optional<Dims> node_axes(const onnx::NodeProto& node, const std::vector<const Known*>& values,
                              std::size_t input, std::int64_t rank) {
  Dims axes;
  if (const auto attr = attr_ints(node, "axes")) {
    axes = *attr;
  } else if (values.size() > input && values[input]) {
    if (values[input]->is_real()) return std::nullopt;
    axes = values[input]->ints;
  } else if (static_cast<std::size_t>(node.input_size()) > input &&
             !node.input(static_cast<int>(input)).empty()) {
    return std::nullopt;  // given, but not known
  }
  for (auto& a : axes) {
    const auto axis = axis_of(a, rank);
    if (!axis) return std::nullopt;
    a = *axis;
  }
  return axes;
}

std::optional<Known> eval_constant(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) {
    if (a.name() == "value" && a.has_t()) return known_from_proto(a.t());
    Known out;
    if (a.name() == "value_int") {
      out.ints = {a.i()};
    } else if (a.name() == "value_ints") {
      out.dims = {a.ints_size()};
      out.ints.assign(a.ints().begin(), a.ints().end());
    } else if (a.name() == "value_float") {
      out.type = T::FLOAT;
      out.reals = {a.f()};
    } else if (a.name() == "value_floats") {
      out.type = T::FLOAT;
      out.dims = {a.floats_size()};
      out.reals.assign(a.floats().begin(), a.floats().end());
    } else {
      continue;
    }
    if (static_cast<std::int64_t>(out.size()) > kMaxFoldElements) return std::nullopt;
    return out;
  }
  return std::nullopt;
}

std::optional<Known> eval_cast(const Known& in, std::int32_t to) {
  if (!is_real_type(to) && !is_integer_or_bool_type(to)) return std::nullopt;
  Known out;
  out.type = to;
  out.dims = in.dims;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!append(out, element(in, i))) return std::nullopt;
  }
  return out;
}

std::optional<Known> eval_reshape(const Known& data, const Known& shape, bool allow_zero) {
  if (shape.is_real() || shape.dims.size() != 1) return std::nullopt;
  Dims dims;
  int unknown = -1;
  for (std::size_t i = 0; i < shape.ints.size(); ++i) {
    std::int64_t d = shape.ints[i];
    if (d == 0 && !allow_zero) {
      if (i >= data.dims.size()) return std::nullopt;
      d = data.dims[i];
    } else if (d == -1) {
      if (unknown >= 0) return std::nullopt;
      unknown = static_cast<int>(i);
      d = 1;
    } else if (d < 0) {
      return std::nullopt;
    }
    dims.push_back(d);
  }
  const auto known = element_count(dims);
  if (!known) return std::nullopt;
  const auto total = static_cast<std::int64_t>(data.size());
  if (unknown >= 0) {
    if (*known == 0 || total % *known != 0) return std::nullopt;
    dims[static_cast<std::size_t>(unknown)] = total / *known;
  } else if (*known != total) {
    return std::nullopt;
  }
  Known out = data;
  out.dims = dims;
  return out;
}

std::optional<Known> eval_transpose(const onnx::NodeProto& node, const Known& in) {
  const auto rank = rank_of(in);
  Dims perm = attr_ints(node, "perm").value_or(Dims{});
  if (perm.empty()) {
    for (auto a = rank - 1; a >= 0; --a) perm.push_back(a);
  }
  if (static_cast<std::int64_t>(perm.size()) != rank) return std::nullopt;
  Dims seen(perm.size(), 0), dims;
  for (auto p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<std::size_t>(p)]++) return std::nullopt;
    dims.push_back(in.dims[static_cast<std::size_t>(p)]);
  }
  const auto strides = strides_of(in.dims);
  std::vector<std::int64_t> indices;
  for_each_index(dims, [&](const Dims& index) {
    std::int64_t flat = 0;
    for (std::size_t a = 0; a < perm.size(); ++a)
      flat += index[a] * strides[static_cast<std::size_t>(perm[a])];
    indices.push_back(flat);
  });
  return pick(in, dims, indices);
}

std::optional<Known> eval_concat(const onnx::NodeProto& node, const std::vector<const Known*>& in) {
  if (in.empty()) return std::nullopt;
  const auto rank = rank_of(*in[0]);
  const auto axis = axis_of(attr_int(node, "axis", 0), std::max<std::int64_t>(rank, 1));
  if (!axis || rank == 0) return std::nullopt;
  const auto ax = static_cast<std::size_t>(*axis);
  Dims dims = in[0]->dims;
  dims[ax] = 0;
  for (const auto* t : in) {
    if (rank_of(*t) != rank || t->is_real() != in[0]->is_real()) return std::nullopt;
    for (std::size_t a = 0; a < dims.size(); ++a) {
      if (a != ax && t->dims[a] != dims[a]) return std::nullopt;
    }
    dims[ax] += t->dims[ax];
  }
  auto out = shaped(in[0]->type, dims);
  if (!out) return std::nullopt;
  // Outer blocks (axes before `axis`), each the inputs' slabs one after the other.
  std::int64_t outer = 1;
  for (std::size_t a = 0; a < ax; ++a) outer *= dims[a];
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const auto* t : in) {
      std::int64_t slab = 1;
      for (std::size_t a = ax; a < t->dims.size(); ++a) slab *= t->dims[a];
      for (std::int64_t k = 0; k < slab; ++k) {
        const auto i = static_cast<std::size_t>(o * slab + k);
        if (out->is_real())
          out->reals.push_back(t->real(i));
        else
          out->ints.push_back(t->ints[i]);
      }
    }
  }
  return out;
}

std::optional<Known> eval_gather(const onnx::NodeProto& node, const Known& data,
                                 const Known& indices) {
  const auto rank = rank_of(data);
  const auto axis = axis_of(attr_int(node, "axis", 0), rank);
  if (!axis || indices.is_real()) return std::nullopt;
  const auto ax = static_cast<std::size_t>(*axis);
  const std::int64_t n = data.dims[ax];
  Dims dims(data.dims.begin(), data.dims.begin() + *axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + *axis + 1, data.dims.end());
  const auto count = element_count(dims);
  if (!count || *count > kMaxFoldElements) return std::nullopt;
  std::int64_t outer = 1, inner = 1;
  for (std::size_t a = 0; a < ax; ++a) outer *= data.dims[a];
  for (std::size_t a = ax + 1; a < data.dims.size(); ++a) inner *= data.dims[a];
  std::vector<std::int64_t> picks;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (auto i : indices.ints) {
      if (i < 0) i += n;
      if (i < 0 || i >= n) return std::nullopt;
      for (std::int64_t k = 0; k < inner; ++k) picks.push_back((o * n + i) * inner + k);
    }
  }
  return pick(data, dims, picks);
}

std::optional<Known> slice_of(const Known& data, const Dims& starts, const Dims& ends, Dims axes,
                              Dims steps);

std::optional<Known> eval_slice(const onnx::NodeProto& node, const std::vector<const Known*>& in) {
  const Known& data = *in[0];
  Dims starts, ends, axes, steps;
  const auto ints_of = [&](std::size_t i, Dims& into) {
    if (in.size() <= i || !in[i])
      return static_cast<std::size_t>(node.input_size()) <= i ||
             node.input(static_cast<int>(i)).empty();
    if (in[i]->is_real()) return false;
    into = in[i]->ints;
    return true;
  };
  if (node.input_size() >= 3) {
    if (!ints_of(1, starts) || !ints_of(2, ends) || !ints_of(3, axes) || !ints_of(4, steps))
      return std::nullopt;
  } else {
    starts = attr_ints(node, "starts").value_or(Dims{});
    ends = attr_ints(node, "ends").value_or(Dims{});
    axes = attr_ints(node, "axes").value_or(Dims{});
  }
  return slice_of(data, starts, ends, axes, steps);
}

std::optional<Known> slice_of(const Known& data, const Dims& starts, const Dims& ends, Dims axes,
                              Dims steps) {
  const auto rank = rank_of(data);
  if (starts.size() != ends.size()) return std::nullopt;
  if (axes.empty()) {
    for (std::size_t a = 0; a < starts.size(); ++a) axes.push_back(static_cast<std::int64_t>(a));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) return std::nullopt;
  Dims first(static_cast<std::size_t>(rank), 0), step(static_cast<std::size_t>(rank), 1),
      dims = data.dims;
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const auto axis = axis_of(axes[k], rank);
    if (!axis || seen[static_cast<std::size_t>(*axis)] || steps[k] == 0) return std::nullopt;
    const auto a = static_cast<std::size_t>(*axis);
    seen[a] = true;
    const std::int64_t n = data.dims[a], s = steps[k];
    if (n == 0) {
      dims[a] = 0;
      continue;
    }
    // Negative positions count from the end; then clamped as the operator's definition says.
    std::int64_t b = starts[k] < 0 ? (starts[k] < -n ? -1 - n : starts[k]) + n : starts[k];
    std::int64_t e = ends[k] < 0 ? (ends[k] < -n ? -1 - n : ends[k]) + n : ends[k];
    // The count rounded up, in unsigned arithmetic: |step| may be 2^63.
    const std::uint64_t magnitude =
        s > 0 ? static_cast<std::uint64_t>(s) : static_cast<std::uint64_t>(-(s + 1)) + 1;
    if (s > 0) {
      b = std::clamp<std::int64_t>(b, 0, n);
      e = std::clamp<std::int64_t>(e, 0, n);
    } else {
      b = std::clamp<std::int64_t>(b, 0, n - 1);
      e = std::clamp<std::int64_t>(e, -1, n - 1);
    }
    const std::int64_t span = s > 0 ? e - b : b - e;
    dims[a] =
        span > 0 ? static_cast<std::int64_t>((static_cast<std::uint64_t>(span) - 1) / magnitude + 1)
                 : 0;
    first[a] = b;
    step[a] = s;
  }
  const auto count = element_count(dims);
  if (!count || *count > kMaxFoldElements) return std::nullopt;
  const auto strides = strides_of(data.dims);
  std::vector<std::int64_t> picks;
  for_each_index(dims, [&](const Dims& index) {
    std::int64_t flat = 0;
    for (std::size_t a = 0; a < index.size(); ++a)
      flat += (first[a] + index[a] * step[a]) * strides[a];
    picks.push_back(flat);
  });
  return pick(data, dims, picks);
}

std::optional<Known> eval_expand(const Known& data, const Known& shape) {
  if (shape.is_real() || shape.dims.size() != 1) return std::nullopt;
  for (const auto d : shape.ints) {
    if (d < 0) return std::nullopt;
  }
  // Broadcast against a tensor of the target shape.
  auto target = shaped(T::BOOL, shape.ints);
  if (!target) return std::nullopt;
  target->ints.assign(static_cast<std::size_t>(element_count(shape.ints).value_or(0)), 0);
  return broadcast({&data, &*target}, data.type,
                   [](const std::vector<Num>& a) { return std::optional(a[0]); });
}

std::optional<Known> eval_tile(const Known& data, const Known& repeats) {
  if (repeats.is_real() || static_cast<std::int64_t>(repeats.size()) != rank_of(data))
    return std::nullopt;
  Dims dims = data.dims;
  for (std::size_t a = 0; a < dims.size(); ++a) {
    if (repeats.ints[a] < 0) return std::nullopt;
    const auto d = checked_mul(dims[a], repeats.ints[a]);
    if (!d) return std::nullopt;
    dims[a] = *d;
  }
  const auto count = element_count(dims);
  if (!count || *count > kMaxFoldElements) return std::nullopt;
  const auto strides = strides_of(data.dims);
  std::vector<std::int64_t> picks;
  for_each_index(dims, [&](const Dims& index) {
    std::int64_t flat = 0;
    for (std::size_t a = 0; a < index.size(); ++a) flat += (index[a] % data.dims[a]) * strides[a];
    picks.push_back(flat);
  });
  return pick(data, dims, picks);
}

std::optional<Known> eval_constant_of_shape(const onnx::NodeProto& node, const Known& shape) {
  if (shape.is_real() || shape.dims.size() != 1) return std::nullopt;
  Known fill;
  fill.type = T::FLOAT;
  fill.reals = {0.0};
  if (const auto* value = attr_tensor(node, "value")) {
    const auto v = known_from_proto(*value);
    if (!v || v->size() != 1) return std::nullopt;
    fill = *v;
  }
  for (const auto d : shape.ints) {
    if (d < 0) return std::nullopt;
  }
  auto out = shaped(fill.type, shape.ints);
  if (!out) return std::nullopt;
  const auto count = static_cast<std::size_t>(element_count(shape.ints).value_or(0));
  if (out->is_real())
    out->reals.assign(count, fill.reals[0]);
  else
    out->ints.assign(count, fill.ints[0]);
  return out;
}

std::optional<Known> eval_range(const Known& start, const Known& limit, const Known& delta) {
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1) return std::nullopt;
  Known out;
  out.type = start.type;
  if (start.is_real()) {
    const double s = start.reals[0], l = limit.real(0), d = delta.real(0);
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d)) return std::nullopt;
    const double n = std::max(0.0, std::ceil((l - s) / d));
    if (n > kMaxFoldElements) return std::nullopt;
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i)
      out.reals.push_back(round_to(out.type, s + i * d));
  } else {
    if (limit.is_real() || delta.is_real() || delta.ints[0] == 0) return std::nullopt;
    const std::int64_t s = start.ints[0], l = limit.ints[0], d = delta.ints[0];
    // ceil((limit - start) / delta) in 128 bits: the difference of two 64-bit values may not
    // fit 64.
    const __int128 span = static_cast<__int128>(l) - s;
    const __int128 steps = (span + d - (d > 0 ? 1 : -1)) / d;
    if (steps > kMaxFoldElements) return std::nullopt;
    const auto n = static_cast<std::int64_t>(std::max<__int128>(0, steps));
    // start + i * delta lies between start and limit.
    for (std::int64_t i = 0; i < n; ++i)
      out.ints.push_back(static_cast<std::int64_t>(s + static_cast<__int128>(i) * d));
  }
  out.dims = {static_cast<std::int64_t>(out.size())};
  return out;
}

std::optional<Known> eval_reduce(const onnx::NodeProto& node, const std::vector<const Known*>& in) {
  const Known& data = *in[0];
  const auto& op = node.op_type();
  const auto rank = rank_of(data);
  auto axes = node_axes(node, in, 1, rank);
  if (!axes) return std::nullopt;
  const bool keep = attr_int(node, "keepdims", 1) != 0;
  if (axes->empty()) {
    if (attr_int(node, "noop_with_empty_axes", 0) != 0) return data;
    for (std::int64_t a = 0; a < rank; ++a) axes->push_back(a);
  }
  std::vector<bool> reduced(static_cast<std::size_t>(rank), false);
  for (auto a : *axes) reduced[static_cast<std::size_t>(a)] = true;
  Dims kept_dims, out_dims;
  for (std::size_t a = 0; a < data.dims.size(); ++a) {
    if (reduced[a]) {
      if (data.dims[a] == 0 && (op == "ReduceMin" || op == "ReduceMax")) return std::nullopt;
      if (keep) out_dims.push_back(1);
    } else {
      out_dims.push_back(data.dims[a]);
    }
    kept_dims.push_back(reduced[a] ? 1 : data.dims[a]);
  }
  const auto count = element_count(kept_dims);
  if (!count) return std::nullopt;
  std::vector<std::optional<Num>> acc(static_cast<std::size_t>(*count));
  std::vector<std::int64_t> members(acc.size(), 0);
  const auto kept_strides = strides_of(kept_dims);
  const auto data_strides = strides_of(data.dims);
  bool ok = true;
  for_each_index(data.dims, [&](const Dims& index) {
    if (!ok) return;
    std::int64_t target = 0, flat = 0;
    for (std::size_t a = 0; a < index.size(); ++a) {
      target += (reduced[a] ? 0 : index[a]) * kept_strides[a];
      flat += index[a] * data_strides[a];
    }
    const Num v = element(data, static_cast<std::size_t>(flat));
    auto& slot = acc[static_cast<std::size_t>(target)];
    ++members[static_cast<std::size_t>(target)];
    if (!slot) {
      slot = v;
      return;
    }
    if (slot->real || v.real) {
      const double x = slot->as_real(), y = v.as_real();
      slot = real_num(op == "ReduceMin"    ? std::min(x, y)
                      : op == "ReduceMax"  ? std::max(x, y)
                      : op == "ReduceProd" ? x * y
                                           : x + y);
      return;
    }
    const auto r = op == "ReduceMin"    ? std::optional(std::min(slot->i, v.i))
                   : op == "ReduceMax"  ? std::optional(std::max(slot->i, v.i))
                   : op == "ReduceProd" ? checked_mul(slot->i, v.i)
                                        : checked_add(slot->i, v.i);
    if (!r)
      ok = false;
    else
      slot = int_num(*r);
  });
  if (!ok) return std::nullopt;
  auto out = shaped(data.type, out_dims);
  if (!out) return std::nullopt;
  for (std::size_t k = 0; k < acc.size(); ++k) {
    Num v = acc[k].value_or(op == "ReduceProd" ? int_num(1) : int_num(0));
    if (op == "ReduceMean") {
      if (members[k] == 0) return std::nullopt;
      v = v.real || data.is_real() ? real_num(v.as_real() / static_cast<double>(members[k]))
                                   : int_num(v.i / members[k]);
    }
    if (!append(*out, v)) return std::nullopt;
  }
  return out;
}

std::optional<std::vector<Known>> eval_split(const onnx::NodeProto& node,
                                             const std::vector<const Known*>& in) {
  const Known& data = *in[0];
  const auto rank = rank_of(data);
  const auto axis = axis_of(attr_int(node, "axis", 0), rank);
  if (!axis) return std::nullopt;
  const auto ax = static_cast<std::size_t>(*axis);
  const auto outputs = static_cast<std::int64_t>(node.output_size());
  Dims split = attr_ints(node, "split").value_or(Dims{});
  if (in.size() > 1 && in[1]) {
    if (in[1]->is_real()) return std::nullopt;
    split = in[1]->ints;
  } else if (node.input_size() > 1 && !node.input(1).empty()) {
    return std::nullopt;
  }
  const std::int64_t n = data.dims[ax];
  if (split.empty()) {
    if (outputs == 0) return std::nullopt;
    const std::int64_t part = (n + outputs - 1) / outputs;
    for (std::int64_t k = 0, left = n; k < outputs; ++k, left -= part)
      split.push_back(std::clamp<std::int64_t>(left, 0, part));
  }
  if (static_cast<std::int64_t>(split.size()) != outputs) return std::nullopt;
  std::vector<Known> out;
  std::int64_t begin = 0;
  for (const auto s : split) {
    if (s < 0 || begin + s > n) return std::nullopt;
    auto part = slice_of(data, {begin}, {begin + s}, {*axis}, {1});
    if (!part) return std::nullopt;
    out.push_back(std::move(*part));
    begin += s;
  }
  return out;
}

std::optional<Known> eval_nonzero(const Known& in) {
  Known out;
  std::vector<Dims> found;
  std::size_t flat = 0;
  for_each_index(in.dims, [&](const Dims& index) {
    if (element(in, flat++).truthy()) found.push_back(index);
  });
  const auto rank = static_cast<std::int64_t>(in.dims.size());
  const auto count = static_cast<std::int64_t>(found.size());
  out.dims = {rank, count};
  for (std::int64_t a = 0; a < rank; ++a) {
    for (const auto& index : found) out.ints.push_back(index[static_cast<std::size_t>(a)]);
  }
  return out;
}

}  // namespace

bool is_real_type(std::int32_t type) {
  return type == T::FLOAT || type == T::DOUBLE || type == T::FLOAT16 || type == T::BFLOAT16;
}

bool is_integer_or_bool_type(std::int32_t type) {
  return type == T::INT64 || type == T::INT32 || type == T::INT16 || type == T::INT8 ||
         type == T::UINT8 || type == T::UINT16 || type == T::UINT32 || type == T::UINT64 ||
         type == T::BOOL;
}

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

std::optional<std::vector<Known>> evaluate_node(
    const onnx::NodeProto& node, const std::vector<const Known*>& in,
    const std::vector<const std::vector<std::int64_t>*>& shapes) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return std::nullopt;
  const auto& op = node.op_type();
  const auto one = [](std::optional<Known> v) -> std::optional<std::vector<Known>> {
    if (!v) return std::nullopt;
    std::vector<Known> out;
    out.push_back(std::move(*v));
    return out;
  };
  if (op == "Constant") return one(eval_constant(node));
  if (op == "Shape" || op == "Size") {
    if (shapes.empty() || !shapes[0]) return std::nullopt;
    const auto& dims = *shapes[0];
    Known out;
    if (op == "Size") {
      const auto n = element_count(dims);
      if (!n) return std::nullopt;
      out.ints = {*n};
      return one(out);
    }
    const auto rank = static_cast<std::int64_t>(dims.size());
    auto start = attr_int(node, "start", 0), end = attr_int(node, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<std::int64_t>(start, 0, rank);
    end = std::clamp<std::int64_t>(end, start, rank);
    out.ints.assign(dims.begin() + start, dims.begin() + end);
    out.dims = {end - start};
    return one(out);
  }
  const auto known = [&](std::size_t count) {
    return in.size() >= count &&
           std::all_of(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(count),
                       [](const Known* t) { return t != nullptr; });
  };
  if (op == "Identity") return known(1) ? one(*in[0]) : std::nullopt;
  if (op == "Cast") {
    if (!known(1)) return std::nullopt;
    return one(eval_cast(*in[0], static_cast<std::int32_t>(attr_int(node, "to", 0))));
  }
  if (op == "CastLike") return known(2) ? one(eval_cast(*in[0], in[1]->type)) : std::nullopt;
  if (const auto it = elementwise_ops().find(op); it != elementwise_ops().end()) {
    const auto& e = it->second;
    const int count = static_cast<int>(in.size());
    if (count < e.min_inputs || count > e.max_inputs || !known(in.size())) return std::nullopt;
    const std::int32_t type = e.result >= 0 ? e.result : op == "Where" ? in[1]->type : in[0]->type;
    return one(broadcast(in, type, [&](const std::vector<Num>& a) { return e.fn(a, node); }));
  }
  if (op == "Clip") {
    if (!known(1)) return std::nullopt;
    std::optional<Num> lo, hi;
    if (const auto v = attr_float(node, "min")) lo = real_num(*v);
    if (const auto v = attr_float(node, "max")) hi = real_num(*v);
    for (int k = 1; k <= 2; ++k) {
      if (node.input_size() <= k || node.input(k).empty()) continue;
      if (static_cast<int>(in.size()) <= k || !in[static_cast<std::size_t>(k)] ||
          in[static_cast<std::size_t>(k)]->size() != 1)
        return std::nullopt;
      (k == 1 ? lo : hi) = element(*in[static_cast<std::size_t>(k)], 0);
    }
    return one(
        broadcast({in[0]}, in[0]->type, [&](const std::vector<Num>& a) -> std::optional<Num> {
          Num v = a[0];
          const auto below = [](const Num& x, const Num& y) {
            return x.real || y.real ? x.as_real() < y.as_real() : x.i < y.i;
          };
          if (lo && below(v, *lo)) v = *lo;
          if (hi && below(*hi, v)) v = *hi;
          return v;
        }));
  }
  if (!known(1)) return std::nullopt;
  const Known& x = *in[0];
  if (op == "Reshape")
    return known(2) ? one(eval_reshape(x, *in[1], attr_int(node, "allowzero", 0) != 0))
                    : std::nullopt;
  if (op == "Flatten") {
    const auto rank = rank_of(x);
    const auto axis = axis_of(attr_int(node, "axis", 1), rank + 1);
    if (!axis) return std::nullopt;
    Known out = x;
    std::int64_t outer = 1;
    for (std::int64_t a = 0; a < *axis; ++a) outer *= x.dims[static_cast<std::size_t>(a)];
    out.dims = {outer, outer == 0 ? 0 : static_cast<std::int64_t>(x.size()) / outer};
    return one(out);
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    Known out = x;
    if (op == "Squeeze") {
      const auto axes = node_axes(node, in, 1, rank_of(x));
      if (!axes) return std::nullopt;
      out.dims.clear();
      for (std::size_t a = 0; a < x.dims.size(); ++a) {
        const bool listed =
            std::find(axes->begin(), axes->end(), static_cast<std::int64_t>(a)) != axes->end();
        if (listed && x.dims[a] != 1) return std::nullopt;
        if (!(x.dims[a] == 1 && (axes->empty() || listed))) out.dims.push_back(x.dims[a]);
      }
      return one(out);
    }
    Dims axes = attr_ints(node, "axes").value_or(Dims{});
    if (axes.empty()) {
      if (!known(2) || in[1]->is_real()) return std::nullopt;
      axes = in[1]->ints;
    }
    const auto rank = static_cast<std::int64_t>(x.dims.size() + axes.size());
    Dims normalized;
    for (auto a : axes) {
      const auto axis = axis_of(a, rank);
      if (!axis) return std::nullopt;
      normalized.push_back(*axis);
    }
    std::sort(normalized.begin(), normalized.end());
    if (std::adjacent_find(normalized.begin(), normalized.end()) != normalized.end())
      return std::nullopt;
    for (auto a : normalized) out.dims.insert(out.dims.begin() + a, 1);
    return one(out);
  }
  if (op == "Concat") return known(in.size()) ? one(eval_concat(node, in)) : std::nullopt;
  if (op == "Gather") return known(2) ? one(eval_gather(node, x, *in[1])) : std::nullopt;
  if (op == "Slice") return one(eval_slice(node, in));
  if (op == "Transpose") return one(eval_transpose(node, x));
  if (op == "Expand") return known(2) ? one(eval_expand(x, *in[1])) : std::nullopt;
  if (op == "Tile") return known(2) ? one(eval_tile(x, *in[1])) : std::nullopt;
  if (op == "ConstantOfShape") return one(eval_constant_of_shape(node, x));
  if (op == "Range") return known(3) ? one(eval_range(x, *in[1], *in[2])) : std::nullopt;
  if (op == "ReduceMin" || op == "ReduceMax" || op == "ReduceSum" || op == "ReduceProd" ||
      op == "ReduceMean")
    return one(eval_reduce(node, in));
  if (op == "Split") return eval_split(node, in);
  if (op == "NonZero") return one(eval_nonzero(x));
  return std::nullopt;
}

}  // namespace truepeak::estimate::onnx_detail
