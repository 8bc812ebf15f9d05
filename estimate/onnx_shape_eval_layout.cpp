// Shape-code operators that move elements unchanged: Reshape, Transpose, Concat, Gather, Slice,
// Split, Expand and Tile, each on any axis.
#include <algorithm>
#include <functional>

#include "core/checked.hpp"
#include "estimate/onnx_shape_eval_detail.hpp"

namespace truepeak::estimate::onnx_detail::shape_eval {
namespace {

// The elements of `data` laid out as `dims`: the element at an index is the one of `data` whose
// flat position is the sum over the axes of offset(axis, the index's coordinate on it).
Known pick_by_axes(const Known& data, const Dims& dims,
                   const std::function<std::int64_t(std::size_t, std::int64_t)>& offset) {
  std::vector<std::int64_t> picks;
  for_each_index(dims, [&](const Dims& index) {
    std::int64_t flat = 0;
    for (std::size_t a = 0; a < index.size(); ++a) flat += offset(a, index[a]);
    picks.push_back(flat);
  });
  return pick(data, dims, picks);
}

}  // namespace

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
  return pick_by_axes(in, dims, [&](std::size_t a, std::int64_t i) {
    return i * strides[static_cast<std::size_t>(perm[a])];
  });
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

namespace {

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
  return pick_by_axes(data, dims, [&](std::size_t a, std::int64_t i) {
    return (first[a] + i * step[a]) * strides[a];
  });
}

}  // namespace

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
  return pick_by_axes(data, dims, [&](std::size_t a, std::int64_t i) {
    return (i % data.dims[a]) * strides[a];
  });
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

}  // namespace truepeak::estimate::onnx_detail::shape_eval
