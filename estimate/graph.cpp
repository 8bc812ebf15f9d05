#include "estimate/graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string_view>
#include <unordered_set>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace truepeak::estimate {

Dim Dim::symbol(std::string name, std::int64_t coeff) {
  Dim d(coeff);
  d.symbols.push_back(std::move(name));
  return d;
}

std::int64_t Dim::eval(const Bindings& bindings) const {
  std::int64_t value = coeff;
  for (const auto& s : symbols) {
    auto it =
        std::find_if(bindings.begin(), bindings.end(), [&](const auto& b) { return b.first == s; });
    if (it == bindings.end())
      throw InputError(fmt::format("dimension {}: symbol '{}' has no value", str(), s));
    const auto product = checked_mul(value, it->second);
    if (!product)
      throw OverflowError(
          fmt::format("dimension {} with {}={}: overflows 64 bits", str(), s, it->second));
    value = *product;
  }
  return value;
}

std::string Dim::str() const {
  if (symbols.empty()) return std::to_string(coeff);
  std::string text = coeff == 1 ? std::string() : fmt::format("{}*", coeff);
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    if (i) text += '*';
    text += symbols[i];
  }
  return text;
}

Dim Dim::parse(const std::string& text) {
  Dim d(1);
  std::size_t pos = 0;
  if (text.empty()) throw InputError("empty dimension");
  while (pos <= text.size()) {
    const auto star = text.find('*', pos);
    const std::string factor =
        text.substr(pos, star == std::string::npos ? std::string::npos : star - pos);
    if (factor.empty()) throw InputError(fmt::format("dimension '{}': empty factor", text));
    if (std::all_of(factor.begin(), factor.end(),
                    [](unsigned char c) { return std::isdigit(c); })) {
      std::int64_t value = 0;
      const auto [end, ec] = std::from_chars(factor.data(), factor.data() + factor.size(), value);
      if (ec != std::errc() || end != factor.data() + factor.size())
        throw InputError(fmt::format("dimension '{}': '{}' does not fit 64 bits", text, factor));
      if (value == 0) throw InputError(fmt::format("dimension '{}': a factor of 0", text));
      const auto product = checked_mul(d.coeff, value);
      if (!product) throw OverflowError(fmt::format("dimension '{}': overflows 64 bits", text));
      d.coeff = *product;
    } else if (std::isalpha(static_cast<unsigned char>(factor[0])) &&
               std::all_of(factor.begin(), factor.end(),
                           [](unsigned char c) { return std::isalnum(c) || c == '_'; })) {
      d.symbols.push_back(factor);
    } else {
      throw InputError(
          fmt::format("dimension '{}': '{}' is neither a number nor a symbol name", text, factor));
    }
    if (star == std::string::npos) break;
    pos = star + 1;
  }
  std::sort(d.symbols.begin(), d.symbols.end());
  return d;
}

Dim operator*(const Dim& a, const Dim& b) {
  const auto coeff = checked_mul(a.coeff, b.coeff);
  if (!coeff)
    throw OverflowError(fmt::format("the product of {} and {} overflows 64 bits", a.str(), b.str()));
  Dim d(*coeff);
  d.symbols = a.symbols;
  d.symbols.insert(d.symbols.end(), b.symbols.begin(), b.symbols.end());
  std::sort(d.symbols.begin(), d.symbols.end());
  return d;
}

std::string shape_str(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ',';
    text += shape[i].str();
  }
  text += ']';
  return text;
}

std::vector<std::int64_t> eval_shape(const Shape& shape, const Bindings& bindings) {
  std::vector<std::int64_t> dims;
  dims.reserve(shape.size());
  for (const auto& d : shape) dims.push_back(d.eval(bindings));
  return dims;
}

Dim num_elements(const Shape& shape) {
  Dim n(1);
  for (const auto& d : shape) n = n * d;
  return n;
}

std::int64_t num_elements(const Shape& shape, const Bindings& bindings) {
  std::int64_t n = 1;
  bool overflow = false;
  for (const auto& d : shape) {
    const auto product = checked_mul(n, d.eval(bindings));
    overflow = overflow || !product;
    n = product.value_or(0);
  }
  if (overflow) {
    std::string dims;
    for (const auto& d : shape) dims += fmt::format("{}{}", dims.empty() ? "" : ",", d.eval(bindings));
    const bool symbolic =
        std::any_of(shape.begin(), shape.end(), [](const Dim& d) { return !d.is_constant(); });
    throw OverflowError(fmt::format("the element count of {}{} overflows 64 bits", shape_str(shape),
                                    symbolic ? " = [" + dims + "]" : ""));
  }
  return n;
}

void check_sizes(const Graph& graph, const Bindings& bindings) {
  const auto check = [&](const TensorRef& t, const Op* op) {
    try {
      (void)num_elements(t.shape, bindings);
    } catch (const OverflowError& e) {
      throw OverflowError(op ? fmt::format("op '{}', tensor '{}': {}", op->name, t.name, e.what())
                             : fmt::format("input '{}': {}", t.name, e.what()));
    }
  };
  for (const auto& t : graph.inputs) check(t, nullptr);
  for (const auto& op : graph.ops) {
    for (const auto* list : {&op.inputs, &op.weights, &op.state})
      for (const auto& t : *list) check(t, &op);
    check(op.output, &op);
  }
}

namespace {
constexpr std::array<std::pair<OpKind, std::string_view>, 12> kKindNames{{
    {OpKind::linear, "linear"},
    {OpKind::matmul, "matmul"},
    {OpKind::conv2d, "conv2d"},
    {OpKind::attention, "attention"},
    {OpKind::elementwise, "elementwise"},
    {OpKind::norm, "norm"},
    {OpKind::softmax, "softmax"},
    {OpKind::pool, "pool"},
    {OpKind::embedding, "embedding"},
    {OpKind::reshape, "reshape"},
    {OpKind::transpose, "transpose"},
    {OpKind::concat, "concat"},
}};
}  // namespace

std::string_view to_string(OpKind kind) {
  for (const auto& [k, name] : kKindNames)
    if (k == kind) return name;
  return "unknown";
}

std::optional<OpKind> parse_op_kind(std::string_view text) {
  for (const auto& [k, name] : kKindNames)
    if (name == text) return k;
  return std::nullopt;
}

double sum_elems(const std::vector<TensorRef>& tensors, const Bindings& bindings) {
  double total = 0;
  for (const auto& t : tensors) total += static_cast<double>(num_elements(t.shape, bindings));
  return total;
}

bool is_max_pool(const Op& op) {
  return op.kind == OpKind::pool && (op.fn == "max" || op.fn == "global_max");
}

double count_params(const Graph& graph, const Bindings& bindings) {
  std::unordered_set<std::string_view> seen;
  double total = 0;
  for (const auto& op : graph.ops)
    for (const auto& w : op.weights)
      if (seen.insert(w.name).second) total += static_cast<double>(num_elements(w.shape, bindings));
  return total;
}

}  // namespace truepeak::estimate
