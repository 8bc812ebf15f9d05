// Shape-code operators that make new elements: Constant, Cast, ConstantOfShape, Range, NonZero,
// and the reductions (ReduceMin, ReduceMax, ReduceSum, ReduceProd, ReduceMean).
#include <algorithm>
#include <cmath>

#include "core/checked.hpp"
#include "estimate/onnx_shape_eval_detail.hpp"

namespace truepeak::estimate::onnx_detail::shape_eval {

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

}  // namespace truepeak::estimate::onnx_detail::shape_eval
