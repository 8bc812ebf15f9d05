// Shape code's elementwise operators and the numpy broadcasting they are evaluated over.
// Arithmetic, comparisons, logic, Where, rounding and a few float functions, on integers or reals.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "core/checked.hpp"
#include "estimate/onnx_shape_eval_detail.hpp"

namespace truepeak::estimate::onnx_detail::shape_eval {
namespace {

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

}  // namespace

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

}  // namespace truepeak::estimate::onnx_detail::shape_eval
