// Shape arithmetic folded at load time. Exporters compute reshape targets inside the graph
// (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Where/Equal for -1 handling); ONNX 1.12's
// data propagation follows only part of that, so once the inputs are bound these small integer
// tensors are evaluated here and handed to shape inference as initializers. Every runtime does
// the same (constant folding); nothing here costs time at inference.
#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/checked.hpp"
#include "estimate/onnx_fold.hpp"

namespace truepeak::estimate::onnx_detail {
namespace {

constexpr std::int64_t kMaxFoldElements = 4096;

struct IntTensor {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> values;
};

bool is_int(std::int32_t t) {
  using T = onnx::TensorProto;
  return t == T::INT64 || t == T::INT32 || t == T::BOOL || t == T::INT8 || t == T::UINT8 || t == T::INT16;
}

// Element count; nullopt for a negative dimension or a count past 64 bits. Shape code handles
// small tensors only, so either means: not folded.
std::optional<std::int64_t> numel(const std::vector<std::int64_t>& dims) {
  std::optional<std::int64_t> n = 1;
  for (const auto d : dims) {
    if (d < 0 || !n) return std::nullopt;
    n = checked_mul(*n, d);
  }
  return n;
}

std::optional<IntTensor> from_proto(const onnx::TensorProto& t) {
  if (!is_int(t.data_type()) || t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  IntTensor out;
  out.dims.assign(t.dims().begin(), t.dims().end());
  const auto count = numel(out.dims);
  if (!count || *count > kMaxFoldElements) return std::nullopt;
  const std::int64_t n = *count;
  using T = onnx::TensorProto;
  if (!t.raw_data().empty()) {
    const auto& raw = t.raw_data();
    const std::size_t width = t.data_type() == T::INT64 ? 8 : t.data_type() == T::INT32 ? 4 : t.data_type() == T::INT16 ? 2 : 1;
    if (raw.size() != static_cast<std::size_t>(n) * width) return std::nullopt;
    for (std::int64_t i = 0; i < n; ++i) {
      const char* p = raw.data() + i * width;
      if (width == 8) { std::int64_t v; std::memcpy(&v, p, 8); out.values.push_back(v); }
      else if (width == 4) { std::int32_t v; std::memcpy(&v, p, 4); out.values.push_back(v); }
      else if (width == 2) { std::int16_t v; std::memcpy(&v, p, 2); out.values.push_back(v); }
      else out.values.push_back(t.data_type() == T::UINT8 || t.data_type() == T::BOOL ? static_cast<unsigned char>(*p) : static_cast<signed char>(*p));
    }
  } else if (t.data_type() == T::INT64) {
    out.values.assign(t.int64_data().begin(), t.int64_data().end());
  } else {
    out.values.assign(t.int32_data().begin(), t.int32_data().end());
  }
  if (static_cast<std::int64_t>(out.values.size()) != n) return std::nullopt;
  return out;
}

// An elementwise function of shape code; nullopt where it has no 64-bit result (an overflow).
using IntFn = std::function<std::optional<std::int64_t>(const std::vector<std::int64_t>&)>;

// Elementwise with numpy broadcasting, for the small tensors shape code uses.
std::optional<IntTensor> broadcast(const std::vector<const IntTensor*>& in, const IntFn& fn) {
  std::size_t rank = 0;
  for (const auto* t : in) rank = std::max(rank, t->dims.size());
  std::vector<std::int64_t> dims(rank, 1);
  for (const auto* t : in) {
    for (std::size_t i = 0; i < t->dims.size(); ++i) {
      auto& d = dims[rank - t->dims.size() + i];
      const auto v = t->dims[i];
      if (d == 1) d = v;
      else if (v != 1 && v != d) return std::nullopt;
    }
  }
  const auto count = numel(dims);
  if (!count || *count > kMaxFoldElements) return std::nullopt;
  const std::int64_t n = *count;
  IntTensor out{dims, {}};
  std::vector<std::int64_t> args(in.size());
  for (std::int64_t flat = 0; flat < n; ++flat) {
    for (std::size_t k = 0; k < in.size(); ++k) {
      const auto& t = *in[k];
      std::int64_t index = 0, rem = flat, stride = 1;
      for (std::size_t i = rank; i-- > 0;) {
        const auto coord = rem % dims[i];
        rem /= dims[i];
        const auto ti = static_cast<std::int64_t>(i) - static_cast<std::int64_t>(rank - t.dims.size());
        if (ti >= 0) {
          const auto td = t.dims[ti];
          index += (td == 1 ? 0 : coord) * stride;
          stride *= td;
        }
      }
      if (index < 0 || index >= static_cast<std::int64_t>(t.values.size())) return std::nullopt;
      args[k] = t.values[index];
    }
    const auto value = fn(args);
    if (!value) return std::nullopt;
    out.values.push_back(*value);
  }
  return out;
}

std::int64_t attr_int(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.type() == onnx::AttributeProto::INT) return a.i();
  }
  return fallback;
}

std::vector<std::int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

class Folder {
 public:
  explicit Folder(onnx::ModelProto& model) : graph_(*model.mutable_graph()) {
    for (const auto& init : graph_.initializer()) {
      initializer_names_.insert(init.name());
      if (auto v = from_proto(init)) known_[init.name()] = *v;
      shapes_[init.name()] = {init.dims().begin(), init.dims().end()};
    }
    auto record = [&](const onnx::ValueInfoProto& v) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
      std::vector<std::int64_t> dims;
      for (const auto& d : v.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value()) return;
        dims.push_back(d.dim_value());
      }
      shapes_[v.name()] = dims;
    };
    for (const auto& v : graph_.input()) record(v);
    for (const auto& v : graph_.value_info()) record(v);
    for (const auto& v : graph_.output()) record(v);
  }

  int run() {
    for (const auto& node : graph_.node()) {
      if (node.output_size() != 1 || known_.count(node.output(0))) continue;
      if (auto v = evaluate(node)) known_[node.output(0)] = std::move(*v);
    }
    // Hand every evaluated tensor that a node reads to shape inference as an initializer.
    int folded = 0;
    std::map<std::string, std::string> renamed;
    for (auto& node : *graph_.mutable_node()) {
      for (auto& input : *node.mutable_input()) {
        if (input.empty() || initializer_names_.count(input) || !known_.count(input)) continue;
        auto it = renamed.find(input);
        if (it == renamed.end()) {
          const std::string name = input + "__folded";
          auto* init = graph_.add_initializer();
          init->set_name(name);
          init->set_data_type(onnx::TensorProto::INT64);
          const auto& value = known_.at(input);
          for (auto d : value.dims) init->add_dims(d);
          for (auto v : value.values) init->add_int64_data(v);
          initializer_names_.insert(name);
          it = renamed.emplace(input, name).first;
          ++folded;
        }
        input = it->second;
      }
    }
    return folded;
  }

 private:
  const IntTensor* get(const onnx::NodeProto& node, int i) const {
    if (i >= node.input_size() || node.input(i).empty()) return nullptr;
    const auto it = known_.find(node.input(i));
    return it == known_.end() ? nullptr : &it->second;
  }

  std::optional<IntTensor> evaluate(const onnx::NodeProto& node) const {
    const auto& op = node.op_type();
    if (!node.domain().empty() && node.domain() != "ai.onnx") return std::nullopt;
    if (op == "Constant") {
      for (const auto& a : node.attribute()) {
        if (a.name() == "value" && a.has_t()) return from_proto(a.t());
        if (a.name() == "value_int") return IntTensor{{}, {a.i()}};
        if (a.name() == "value_ints") return IntTensor{{a.ints_size()}, {a.ints().begin(), a.ints().end()}};
      }
      return std::nullopt;
    }
    if (op == "Shape" || op == "Size") {
      const auto it = shapes_.find(node.input(0));
      if (it == shapes_.end()) return std::nullopt;
      if (op == "Size") {
        const auto n = numel(it->second);
        if (!n) return std::nullopt;
        return IntTensor{{}, {*n}};
      }
      auto dims = it->second;
      const auto rank = static_cast<std::int64_t>(dims.size());
      auto start = attr_int(node, "start", 0), end = attr_int(node, "end", rank);
      if (start < 0) start += rank;
      if (end < 0) end += rank;
      start = std::clamp<std::int64_t>(start, 0, rank);
      end = std::clamp<std::int64_t>(end, start, rank);
      std::vector<std::int64_t> values(dims.begin() + start, dims.begin() + end);
      return IntTensor{{static_cast<std::int64_t>(values.size())}, values};
    }
    std::vector<const IntTensor*> in;
    for (int i = 0; i < node.input_size(); ++i) in.push_back(get(node, i));
    auto all_known = [&](int count) {
      if (static_cast<int>(in.size()) < count) return false;
      return std::all_of(in.begin(), in.begin() + count, [](const IntTensor* t) { return t != nullptr; });
    };
    if (op == "Identity" || op == "Cast") {
      if (!all_known(1)) return std::nullopt;
      if (op == "Cast" && !is_int(static_cast<std::int32_t>(attr_int(node, "to", 0)))) return std::nullopt;
      return *in[0];
    }
    if (op == "Unsqueeze" || op == "Squeeze") {
      if (!all_known(1)) return std::nullopt;
      auto axes = attr_ints(node, "axes");
      if (axes.empty() && in.size() > 1 && in[1]) axes = in[1]->values;
      IntTensor out = *in[0];
      if (op == "Squeeze") {
        std::vector<std::int64_t> dims;
        const auto rank = static_cast<std::int64_t>(out.dims.size());
        for (std::int64_t i = 0; i < rank; ++i) {
          const bool listed = std::any_of(axes.begin(), axes.end(), [&](auto a) { return (a < 0 ? a + rank : a) == i; });
          if (!(out.dims[i] == 1 && (axes.empty() || listed))) dims.push_back(out.dims[i]);
        }
        out.dims = dims;
      } else {
        const auto rank = static_cast<std::int64_t>(out.dims.size() + axes.size());
        std::vector<std::int64_t> normalized;
        for (auto a : axes) {
          if (a < -rank || a >= rank) return std::nullopt;
          normalized.push_back(a < 0 ? a + rank : a);
        }
        std::sort(normalized.begin(), normalized.end());
        for (auto a : normalized) {
          out.dims.insert(out.dims.begin() + std::min<std::int64_t>(a, static_cast<std::int64_t>(out.dims.size())), 1);
        }
      }
      return out;
    }
    if (op == "Concat") {
      if (!all_known(static_cast<int>(in.size()))) return std::nullopt;
      IntTensor out{{0}, {}};
      for (const auto* t : in) {
        if (t->dims.size() > 1) return std::nullopt;
        out.values.insert(out.values.end(), t->values.begin(), t->values.end());
      }
      out.dims[0] = static_cast<std::int64_t>(out.values.size());
      return out;
    }
    if (op == "Gather") {
      if (!all_known(2) || in[0]->dims.size() != 1 || attr_int(node, "axis", 0) != 0) return std::nullopt;
      IntTensor out{in[1]->dims, {}};
      const auto n = static_cast<std::int64_t>(in[0]->values.size());
      for (auto i : in[1]->values) {
        if (i < 0) i += n;
        if (i < 0 || i >= n) return std::nullopt;
        out.values.push_back(in[0]->values[i]);
      }
      return out;
    }
    if (op == "Slice") {
      if (!all_known(1) || in[0]->dims.size() != 1) return std::nullopt;
      std::vector<std::int64_t> starts, ends, steps;
      if (in.size() >= 3) {
        if (!in[1] || !in[2]) return std::nullopt;
        starts = in[1]->values;
        ends = in[2]->values;
        if (in.size() >= 5 && in[4]) steps = in[4]->values;
      } else {
        starts = attr_ints(node, "starts");
        ends = attr_ints(node, "ends");
      }
      if (starts.size() != 1 || ends.size() != 1) return std::nullopt;
      const auto n = static_cast<std::int64_t>(in[0]->values.size());
      const std::int64_t step = steps.empty() ? 1 : steps[0];
      if (step == 0) return std::nullopt;
      auto clampi = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) { return std::clamp(v < 0 ? v + n : v, lo, hi); };
      // Each index stays within [-1, n]: a step past that ends the slice.
      const auto next = [&](std::int64_t i) { return checked_add(i, step).value_or(step > 0 ? n : -1); };
      IntTensor out{{0}, {}};
      if (step > 0) {
        for (auto i = clampi(starts[0], 0, n); i < clampi(ends[0], 0, n); i = next(i)) out.values.push_back(in[0]->values[i]);
      } else {
        for (auto i = clampi(starts[0], -1, n - 1); i > clampi(ends[0], -1, n - 1); i = next(i)) {
          out.values.push_back(in[0]->values[i]);
        }
      }
      out.dims[0] = static_cast<std::int64_t>(out.values.size());
      return out;
    }
    using R = std::optional<std::int64_t>;
    constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
    // Arity of each: a node with fewer inputs is not folded.
    static const std::map<std::string, std::pair<int, IntFn>> functions = {
        {"Add", {2, [](const auto& a) { return checked_add(a[0], a[1]); }}},
        {"Sub", {2, [](const auto& a) { return checked_sub(a[0], a[1]); }}},
        {"Mul", {2, [](const auto& a) { return checked_mul(a[0], a[1]); }}},
        {"Div", {2, [](const auto& a) { return a[1] == 0 ? R(0) : a[0] == kMin && a[1] == -1 ? R() : R(a[0] / a[1]); }}},
        {"Mod", {2, [](const auto& a) { return a[1] == 0 || a[1] == -1 ? R(0) : R(a[0] % a[1]); }}},
        {"Max", {2, [](const auto& a) { return R(std::max(a[0], a[1])); }}},
        {"Min", {2, [](const auto& a) { return R(std::min(a[0], a[1])); }}},
        {"Equal", {2, [](const auto& a) { return R(a[0] == a[1]); }}},
        {"Less", {2, [](const auto& a) { return R(a[0] < a[1]); }}},
        {"Greater", {2, [](const auto& a) { return R(a[0] > a[1]); }}},
        {"Where", {3, [](const auto& a) { return R(a[0] ? a[1] : a[2]); }}},
        {"Not", {1, [](const auto& a) { return R(!a[0]); }}},
        {"Neg", {1, [](const auto& a) { return a[0] == kMin ? R() : R(-a[0]); }}},
        {"Abs", {1, [](const auto& a) { return a[0] == kMin ? R() : R(a[0] < 0 ? -a[0] : a[0]); }}},
    };
    if (const auto it = functions.find(op); it != functions.end()) {
      const int arity = it->second.first;
      if (static_cast<int>(in.size()) < arity || !all_known(arity)) return std::nullopt;
      return broadcast(std::vector<const IntTensor*>(in.begin(), in.begin() + arity), it->second.second);
    }
    if (op == "ConstantOfShape") {
      if (!all_known(1)) return std::nullopt;
      const auto count = numel(in[0]->values);
      if (!count || *count > kMaxFoldElements) return std::nullopt;
      std::int64_t fill = 0;
      for (const auto& a : node.attribute()) {
        if (a.name() == "value" && a.has_t()) {
          const auto v = from_proto(a.t());
          if (!v || v->values.empty()) return std::nullopt;  // a float fill: not shape code
          fill = v->values[0];
        }
      }
      return IntTensor{in[0]->values, std::vector<std::int64_t>(static_cast<std::size_t>(*count), fill)};
    }
    if (op == "Range") {
      if (!all_known(3) || in[0]->values.empty() || in[1]->values.empty() || in[2]->values.empty() ||
          in[2]->values[0] == 0)
        return std::nullopt;
      const auto start = in[0]->values[0], limit = in[1]->values[0], delta = in[2]->values[0];
      // ceil((limit - start) / delta) elements, in 128 bits: the difference of two 64-bit values
      // may not fit 64.
      const __int128 span = static_cast<__int128>(limit) - start;
      const __int128 steps = (span + delta - (delta > 0 ? 1 : -1)) / delta;
      if (steps > kMaxFoldElements) return std::nullopt;
      const auto n = static_cast<std::int64_t>(std::max<__int128>(0, steps));
      IntTensor out{{n}, {}};
      // start + i * delta lies between start and limit.
      for (std::int64_t i = 0; i < n; ++i) out.values.push_back(static_cast<std::int64_t>(start + static_cast<__int128>(i) * delta));
      return out;
    }
    if (op == "ReduceProd" || op == "ReduceSum") {
      if (!all_known(1) || in[0]->dims.size() > 1 || attr_int(node, "keepdims", 1) != 0) return std::nullopt;
      std::optional<std::int64_t> r = op == "ReduceProd" ? 1 : 0;
      for (auto v : in[0]->values) {
        if (r) r = op == "ReduceProd" ? checked_mul(*r, v) : checked_add(*r, v);
      }
      if (!r) return std::nullopt;
      return IntTensor{{}, {*r}};
    }
    return std::nullopt;
  }

  onnx::GraphProto& graph_;
  std::set<std::string> initializer_names_;
  std::map<std::string, IntTensor> known_;
  std::map<std::string, std::vector<std::int64_t>> shapes_;
};

}  // namespace

int fold_shape_tensors(onnx::ModelProto& model) { return Folder(model).run(); }

}  // namespace truepeak::estimate::onnx_detail
