// Load-time evaluation of single ONNX nodes on small known tensors: the dispatch on the node's
// type (Shape, Size, Identity, Flatten, Squeeze, Unsqueeze and Clip evaluated here, the other
// operators in onnx_shape_eval_*.cpp) and the attribute readers, axes and tensor builders they
// share. Each operator returns nullopt rather than guess: a value it cannot compute exactly leaves
// the shape to the later steps.
#include "estimate/onnx_shape_eval.hpp"

#include <algorithm>
#include <functional>

#include "estimate/onnx_shape_eval_detail.hpp"

namespace truepeak::estimate::onnx_detail {
namespace shape_eval {
namespace {

std::optional<double> attr_float(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.type() == onnx::AttributeProto::FLOAT) return a.f();
  }
  return std::nullopt;
}

}  // namespace

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

const onnx::TensorProto* attr_tensor(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.has_t()) return &a.t();
  }
  return nullptr;
}

std::optional<std::int64_t> axis_of(std::int64_t a, std::int64_t rank) {
  if (a < -rank || a >= rank) return std::nullopt;
  return a < 0 ? a + rank : a;
}

Dims strides_of(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

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

}  // namespace shape_eval

using namespace shape_eval;

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
