#include "estimate/builder.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace truepeak::estimate {
namespace {

std::string weight_or(const std::string& weight_name, const std::string& name, const char* suffix) {
  return weight_name.empty() ? name + suffix : weight_name;
}

Dim require_constant(const Dim& d, const char* what) {
  if (!d.is_constant())
    throw InputError(fmt::format("{} must be a number, not '{}'", what, d.str()));
  return d;
}

// Callers have checked kernel, stride and dilation >= 1 and pad >= 0.
std::int64_t conv_out(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                      std::int64_t dilation) {
  const auto pads = checked_mul(2, pad);
  const auto padded = pads ? checked_add(in, *pads) : std::nullopt;
  const auto window = checked_mul(dilation, kernel - 1);
  if (!padded || !window)
    throw OverflowError(fmt::format(
        "window of {} (dilation {}) over input {} with pad {}: overflows 64 bits", kernel, dilation,
        in, pad));
  if (*window >= *padded)
    throw InputError(fmt::format("window of {} (dilation {}) does not fit input {} with pad {}",
                                 kernel, dilation, in, pad));
  return (*padded - *window - 1) / stride + 1;
}

Op base(const std::string& name, OpKind kind, std::vector<TensorRef> inputs, Shape out) {
  Op op;
  op.name = name;
  op.kind = kind;
  op.inputs = std::move(inputs);
  op.output = {name, std::move(out)};
  return op;
}

}  // namespace

bool same_elements(const Shape& a, const Shape& b) { return num_elements(a) == num_elements(b); }

Op make_linear(const std::string& name, const TensorRef& x, const Dim& out_features, bool bias,
               const std::string& weight_name) {
  if (x.shape.empty()) throw InputError("linear input has no dimensions");
  Shape out = x.shape;
  const Dim in_features = out.back();
  out.back() = out_features;
  Op op = base(name, OpKind::linear, {x}, out);
  op.weights.push_back({weight_or(weight_name, name, ".weight"), {in_features, out_features}});
  if (bias) op.weights.push_back({name + ".bias", {out_features}});
  return op;
}

Op make_matmul(const std::string& name, const TensorRef& a, const TensorRef& b, bool transpose_a,
               bool transpose_b) {
  if (a.shape.size() < 2 || b.shape.size() < 2)
    throw InputError("matmul operands need at least 2 dimensions");
  const auto ra = a.shape.size(), rb = b.shape.size();
  const Dim m = transpose_a ? a.shape[ra - 1] : a.shape[ra - 2];
  const Dim ka = transpose_a ? a.shape[ra - 2] : a.shape[ra - 1];
  const Dim kb = transpose_b ? b.shape[rb - 1] : b.shape[rb - 2];
  const Dim n = transpose_b ? b.shape[rb - 2] : b.shape[rb - 1];
  if (!(ka == kb))
    throw InputError(fmt::format("inner dimensions differ: {} vs {}", ka.str(), kb.str()));
  const Shape& longer = ra >= rb ? a.shape : b.shape;
  Shape out(longer.begin(), longer.end() - 2);
  out.push_back(m);
  out.push_back(n);
  Op op = base(name, OpKind::matmul, {a, b}, out);
  op.transpose_a = transpose_a;
  op.transpose_b = transpose_b;
  return op;
}

Op make_conv2d(const std::string& name, const TensorRef& x, const Dim& out_channels,
               const ConvAttrs& attrs, bool bias) {
  if (x.shape.size() != 4)
    throw InputError(fmt::format("conv2d input must be NCHW, got {}", shape_str(x.shape)));
  const std::int64_t c = require_constant(x.shape[1], "input channels").coeff;
  const std::int64_t k = require_constant(out_channels, "output channels").coeff;
  const std::int64_t h = require_constant(x.shape[2], "input height").coeff;
  const std::int64_t w = require_constant(x.shape[3], "input width").coeff;
  if (attrs.groups < 1 || c % attrs.groups != 0 || k % attrs.groups != 0)
    throw InputError(fmt::format("groups {} must divide input channels {} and output channels {}",
                                 attrs.groups, c, k));
  if (attrs.stride < 1 || attrs.dilation < 1 || attrs.pad < 0 || attrs.kernel_h < 1 ||
      attrs.kernel_w < 1)
    throw InputError("kernel, stride and dilation must be >= 1 and pad >= 0");
  const Shape out{x.shape[0], k,
                  conv_out(h, attrs.kernel_h, attrs.stride, attrs.pad, attrs.dilation),
                  conv_out(w, attrs.kernel_w, attrs.stride, attrs.pad, attrs.dilation)};
  Op op = base(name, OpKind::conv2d, {x}, out);
  op.kernel_h = attrs.kernel_h;
  op.kernel_w = attrs.kernel_w;
  op.stride = attrs.stride;
  op.pad = attrs.pad;
  op.dilation = attrs.dilation;
  op.groups = attrs.groups;
  op.weights.push_back({name + ".weight", {k, c / attrs.groups, attrs.kernel_h, attrs.kernel_w}});
  if (bias) op.weights.push_back({name + ".bias", {k}});
  return op;
}

Op make_attention(const std::string& name, const TensorRef& q, const TensorRef& k,
                  const TensorRef& v, bool causal, const std::vector<TensorRef>& cache) {
  for (const auto* t : {&q, &k, &v})
    if (t->shape.size() != 4)
      throw InputError(
          fmt::format("attention operands must be [B, H, S, D], got {}", shape_str(t->shape)));
  if (!(q.shape[3] == k.shape[3]) || !(k.shape[3] == v.shape[3]))
    throw InputError("attention head sizes of q, k and v differ");
  if (!(k.shape == v.shape)) throw InputError("attention k and v shapes differ");
  if (q.shape[1].is_constant() && k.shape[1].is_constant() &&
      q.shape[1].coeff % k.shape[1].coeff != 0)
    throw InputError("query heads must be a multiple of key/value heads");
  for (const auto& c : cache)
    if (c.shape.size() != 4 || !(c.shape[1] == k.shape[1]) || !(c.shape[3] == k.shape[3]))
      throw InputError(fmt::format("cache {} must be [B, Hkv, T, D] like k", c.name));
  Op op = base(name, OpKind::attention, {q, k, v}, q.shape);
  op.causal = causal;
  op.state = cache;
  return op;
}

Op make_elementwise(const std::string& name, const std::string& fn,
                    const std::vector<TensorRef>& inputs, const std::vector<TensorRef>& params) {
  if (inputs.empty()) throw InputError("elementwise op needs at least one input");
  // Broadcasting: the output has the shape of the largest operand (more symbols such as the
  // batch first, then more elements).
  auto size_key = [](const TensorRef& t) {
    const Dim n = num_elements(t.shape);
    return std::pair{n.symbols.size(), n.coeff};
  };
  const TensorRef* largest = &inputs.front();
  for (const auto& t : inputs)
    if (size_key(t) > size_key(*largest)) largest = &t;
  Op op = base(name, OpKind::elementwise, inputs, largest->shape);
  op.fn = fn;
  op.weights = params;
  return op;
}

Op make_norm(const std::string& name, const std::string& fn, const TensorRef& x, bool affine) {
  if (x.shape.empty()) throw InputError("norm input has no dimensions");
  Dim channels;
  if (fn == "batchnorm") {
    if (x.shape.size() < 2) throw InputError("batchnorm input needs a channel axis (axis 1)");
    channels = x.shape[1];
  } else if (fn == "layernorm" || fn == "rmsnorm") {
    channels = x.shape.back();
  } else {
    throw InputError(fmt::format("unknown norm '{}' (batchnorm, layernorm, rmsnorm)", fn));
  }
  Op op = base(name, OpKind::norm, {x}, x.shape);
  op.fn = fn;
  if (affine) {
    op.weights.push_back({name + ".weight", {channels}});
    if (fn != "rmsnorm") op.weights.push_back({name + ".bias", {channels}});
  }
  return op;
}

Op make_softmax(const std::string& name, const TensorRef& x) {
  return base(name, OpKind::softmax, {x}, x.shape);
}

Op make_pool(const std::string& name, const std::string& fn, const TensorRef& x,
             const ConvAttrs& attrs) {
  if (fn != "max" && fn != "avg") throw InputError(fmt::format("unknown pool '{}' (max, avg)", fn));
  if (x.shape.size() != 4)
    throw InputError(fmt::format("pool input must be NCHW, got {}", shape_str(x.shape)));
  const std::int64_t h = require_constant(x.shape[2], "input height").coeff;
  const std::int64_t w = require_constant(x.shape[3], "input width").coeff;
  ConvAttrs a = attrs;
  const bool global = a.kernel_h == 0 && a.kernel_w == 0;
  if (global) a = {h, w, 1, 0, 1, 1};
  if (a.kernel_h < 1 || a.kernel_w < 1 || a.stride < 1 || a.pad < 0)
    throw InputError(fmt::format(
        "kernel {}x{}, stride {}, pad {}: kernel and stride must be >= 1 and pad >= 0 (kernel 0: "
        "a global pool)",
        a.kernel_h, a.kernel_w, a.stride, a.pad));
  const Shape out{x.shape[0], x.shape[1], conv_out(h, a.kernel_h, a.stride, a.pad, 1),
                  conv_out(w, a.kernel_w, a.stride, a.pad, 1)};
  Op op = base(name, OpKind::pool, {x}, out);
  // A global pool is its own kernel in runtimes (a reduction over the whole image, PyTorch's
  // adaptive pool), far faster than a window pool's per element: a kind of its own.
  op.fn = global ? "global_" + fn : fn;
  op.kernel_h = a.kernel_h;
  op.kernel_w = a.kernel_w;
  op.stride = a.stride;
  op.pad = a.pad;
  return op;
}

Op make_embedding(const std::string& name, const TensorRef& ids, const Dim& vocab, const Dim& dim,
                  const std::string& weight_name) {
  Shape out = ids.shape;
  out.push_back(dim);
  Op op = base(name, OpKind::embedding, {ids}, out);
  op.weights.push_back({weight_or(weight_name, name, ".weight"), {vocab, dim}});
  return op;
}

Op make_reshape(const std::string& name, const TensorRef& x, const Shape& shape) {
  if (!same_elements(x.shape, shape))
    throw InputError(fmt::format("reshape changes the element count: {} -> {}", shape_str(x.shape),
                                 shape_str(shape)));
  return base(name, OpKind::reshape, {x}, shape);
}

Op make_slice(const std::string& name, const TensorRef& x, const Shape& shape) {
  if (shape.empty()) throw InputError("a slice needs its output shape");
  Op op = base(name, OpKind::reshape, {x}, shape);
  op.fn = "slice";
  return op;
}

Op make_transpose(const std::string& name, const TensorRef& x, const std::vector<int>& perm) {
  if (perm.size() != x.shape.size()) throw InputError("perm must name every axis once");
  std::vector<int> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int>(i)) throw InputError("perm must name every axis once");
  Shape out;
  for (int p : perm) out.push_back(x.shape[static_cast<std::size_t>(p)]);
  Op op = base(name, OpKind::transpose, {x}, out);
  op.fn = transpose_fn(std::vector<std::int64_t>(perm.begin(), perm.end()));
  return op;
}

std::string transpose_fn(const std::vector<std::int64_t>& perm) {
  const auto last = static_cast<std::int64_t>(perm.size()) - 1;
  return last > 0 && perm.back() != last ? "inner" : "";
}

Op make_concat(const std::string& name, const std::vector<TensorRef>& inputs, int axis,
               const std::vector<TensorRef>& params) {
  if (inputs.empty()) throw InputError("concat needs inputs");
  const auto rank = static_cast<int>(inputs.front().shape.size());
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw InputError(fmt::format("axis {} out of range for rank {}", axis, rank));
  Shape out = inputs.front().shape;
  std::int64_t extra = 0;
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i].shape.size() != out.size()) throw InputError("concat inputs differ in rank");
    extra = add_or_throw(
        extra, require_constant(inputs[i].shape[static_cast<std::size_t>(a)], "concat axis size").coeff,
        "concat axis size");
  }
  for (const auto& p : params) {
    if (p.shape.size() != out.size()) throw InputError("concat parameter differs in rank");
    extra = add_or_throw(
        extra, require_constant(p.shape[static_cast<std::size_t>(a)], "concat axis size").coeff,
        "concat axis size");
  }
  out[static_cast<std::size_t>(a)] = Dim(add_or_throw(
      require_constant(out[static_cast<std::size_t>(a)], "concat axis size").coeff, extra,
      "concat axis size"));
  Op op = base(name, OpKind::concat, inputs, out);
  op.axis = a;
  op.weights = params;
  return op;
}

const TensorRef& GraphBuilder::input(const std::string& name, const Shape& shape) {
  if (tensors_.count(name)) throw InputError(fmt::format("tensor '{}' is defined twice", name));
  graph_.inputs.push_back({name, shape});
  return tensors_.emplace(name, TensorRef{name, shape}).first->second;
}

const TensorRef& GraphBuilder::add(Op op) {
  if (tensors_.count(op.output.name))
    throw InputError(fmt::format("tensor '{}' is defined twice", op.output.name));
  const TensorRef out = op.output;
  graph_.ops.push_back(std::move(op));
  return tensors_.emplace(out.name, out).first->second;
}

const TensorRef* GraphBuilder::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

}  // namespace truepeak::estimate
