// GEMMs, convolutions and pools as estimator ops: their operands and windows checked, SAME
// padding, 1-D convolutions as 2-D ones, vector operands of MatMul, linears from constant weights.
#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/checked.hpp"
#include "estimate/onnx_map_detail.hpp"

namespace truepeak::estimate::onnx_detail::mapping {

Mapper::Window Mapper::window_of(const Node& node, const Dims& x, const Dims& kernel) const {
  if (x.size() < 3) fail(node, fmt::format("its input has {} dimensions, not batch, channels and space", x.size()));
  const std::size_t spatial = x.size() - 2;
  Window win{kernel, node.ints_attr("strides"), node.ints_attr("dilations"), node.ints_attr("pads"),
             node.strings.count("auto_pad") ? node.strings.at("auto_pad") : std::string("NOTSET")};
  if (win.strides.empty()) win.strides.assign(spatial, 1);
  if (win.dilations.empty()) win.dilations.assign(spatial, 1);
  if (win.pads.empty()) win.pads.assign(2 * spatial, 0);
  if (win.kernel.size() != spatial || win.strides.size() != spatial || win.dilations.size() != spatial ||
      win.pads.size() != 2 * spatial) {
    fail(node, fmt::format("kernel [{}], strides [{}], dilations [{}] and pads [{}] do not give {} spatial "
                           "axes (pads two each)",
                           fmt::join(win.kernel, ","), fmt::join(win.strides, ","), fmt::join(win.dilations, ","),
                           fmt::join(win.pads, ","), spatial));
  }
  const bool same = win.auto_pad == "SAME_UPPER" || win.auto_pad == "SAME_LOWER";
  for (std::size_t i = 0; i < spatial; ++i) {
    const std::int64_t k = win.kernel[i], d = win.dilations[i], in = x[2 + i];
    if (k < 1 || win.strides[i] < 1 || d < 1 || win.pads[i] < 0 || win.pads[i + spatial] < 0)
      fail(node, "kernel, strides and dilations must be 1 or more, pads 0 or more");
    const auto window = checked_mul(d, k - 1);
    const auto pads = checked_add(win.pads[i], win.pads[i + spatial]);
    const auto padded = pads ? checked_add(in, win.auto_pad == "VALID" ? 0 : *pads) : std::nullopt;
    if (!window || !padded) fail(node, "its window arithmetic overflows 64 bits");
    // SAME pads the input as the window needs.
    if (!same && *window >= *padded) {
      fail(node, fmt::format("its window of {} (dilation {}) on spatial axis {} is larger than the input's {} "
                             "with pads {}+{}",
                             k, d, i, in, win.auto_pad == "VALID" ? 0 : win.pads[i],
                             win.auto_pad == "VALID" ? 0 : win.pads[i + spatial]));
    }
  }
  return win;
}

void Mapper::emit_conv(int index, const Node& node) {
  const auto& x = shape_of(node.inputs.at(0), node);
  const auto& w = shape_of(node.inputs.at(1), node);
  if (x.size() < 3)
    fail(node, fmt::format("its input '{}' has {} dimension(s), where a convolution's has a batch, channels and "
                           "at least one spatial axis",
                           node.inputs[0], x.size()));
  if (x.size() != 4 && x.size() != 3) {
    result_.warnings.push_back(fmt::format("{}: {}-D convolution costed memory-bound (only 1-D and 2-D are modelled)",
                                           node.name, x.size() < 2 ? 0 : x.size() - 2));
    return emit_unknown(node);
  }
  const bool one_d = x.size() == 3;
  if (w.size() != x.size())
    fail(node, fmt::format("its weight '{}' has {} dimensions, its input {}", node.inputs[1], w.size(), x.size()));
  require_positive(node, node.inputs[0], x);
  require_positive(node, node.inputs[1], w);
  const std::int64_t group = node.int_attr("group", 1);
  const auto channels = checked_mul(w[1], group);
  if (group < 1 || !channels || *channels != x[1] || w[0] % group != 0) {
    fail(node, fmt::format("group {}: its input's {} channels must be the weight's {} per group times the groups, "
                           "and its {} output channels a multiple of the groups",
                           group, x[1], w[1], w[0]));
  }
  const Dims kernel(w.begin() + 2, w.end());
  if (const auto given = node.ints_attr("kernel_shape"); !given.empty() && given != kernel) {
    fail(node, fmt::format("kernel_shape [{}] differs from its weight's [{}]", fmt::join(given, ","),
                           fmt::join(kernel, ",")));
  }
  const Window win = window_of(node, x, kernel);
  Op op = make_op(node, OpKind::conv2d);
  Dims x4 = one_d ? Dims{x[0], x[1], 1, x[2]} : x;
  Dims w4 = one_d ? Dims{w[0], w[1], 1, w[2]} : w;
  op.inputs.push_back({node.inputs[0], to_shape(x4)});
  op.weights.push_back({node.inputs[1], to_shape(w4)});
  const std::string bias = node.inputs.size() > 2 && !node.inputs[2].empty() ? node.inputs[2]
                           : bias_.count(index)                               ? bias_.at(index)
                                                                              : std::string();
  if (!bias.empty() && is_parameter(bias)) op.weights.push_back({bias, Shape{Dim(w4[0])}});
  op.kernel_h = w4[2];
  op.kernel_w = w4[3];
  op.groups = group;
  const std::size_t spatial = one_d ? 1 : 2;
  // The op carries one stride/pad/dilation: the width one (the height one for 1-D is 1).
  const std::size_t axis = spatial - 1;
  op.stride = win.strides[axis];
  op.dilation = win.dilations[axis];
  if (win.auto_pad == "SAME_UPPER" || win.auto_pad == "SAME_LOWER") {
    // Half the padding SAME adds: (out - 1) x stride + window - in, where (out - 1) x stride < in.
    const std::int64_t in = x4[3];
    const std::int64_t out = in / op.stride + (in % op.stride != 0);
    const auto window = checked_mul(w4[3] - 1, op.dilation);
    const auto total = window ? checked_add((out - 1) * op.stride + 1 - in, *window) : std::nullopt;
    if (!total) fail(node, "its window arithmetic overflows 64 bits");
    op.pad = std::max<std::int64_t>(0, *total) / 2;
  } else if (win.auto_pad == "VALID") {
    op.pad = 0;
  } else {
    op.pad = win.pads[axis] / 2 + win.pads[axis + spatial] / 2 + (win.pads[axis] % 2 + win.pads[axis + spatial] % 2) / 2;
  }
  if (!one_d && (win.strides[0] != win.strides[1] || win.dilations[0] != win.dilations[1] ||
                 win.pads[0] != win.pads[1] || win.pads[0] != win.pads[2] || win.pads[1] != win.pads[3])) {
    result_.warnings.push_back(fmt::format(
        "{}: non-uniform strides/pads/dilations {}/{}/{}: costed with the width-axis values", node.name,
        fmt::join(win.strides, ","), fmt::join(win.pads, ","), fmt::join(win.dilations, ",")));
  }
  const std::string out = output_of(index);
  const auto& y = require_output(node, out, x.size());
  op.output = {out, to_shape(one_d ? Dims{y[0], y[1], 1, y[2]} : y)};
  push(std::move(op));
}

void Mapper::emit_gemm(int index, const Node& node) {
  std::string a = node.inputs.at(0), b = node.inputs.at(1);
  bool trans_a = node.op_type == "Gemm" && node.int_attr("transA", 0) != 0;
  bool trans_b = node.op_type == "Gemm" && node.int_attr("transB", 0) != 0;
  if (const auto it = transposed_source_.find(a); it != transposed_source_.end()) {
    a = it->second;
    trans_a = !trans_a;
  }
  if (const auto it = transposed_source_.find(b); it != transposed_source_.end()) {
    b = it->second;
    trans_b = !trans_b;
  }
  const std::string out = output_of(index);
  std::string bias = node.op_type == "Gemm" && node.inputs.size() > 2 ? node.inputs[2] : std::string();
  if (bias.empty() && bias_.count(index)) bias = bias_.at(index);

  Dims a_dims = shape_of(a, node);
  Dims b_dims = shape_of(b, node);
  require_positive(node, a, a_dims);
  require_positive(node, b, b_dims);
  const Dims& y = require_output(node, out);
  if (a_dims.empty() || b_dims.empty()) fail(node, "an operand is a scalar, not a matrix");
  // The inner dimensions, as the node reads its operands.
  const auto inner = [&](const Dims& dims, bool transposed, bool left) {
    if (dims.size() == 1) return dims[0];
    return left != transposed ? dims.back() : dims[dims.size() - 2];
  };
  if (inner(a_dims, trans_a, true) != inner(b_dims, trans_b, false)) {
    fail(node, fmt::format("its operands' inner dimensions differ: [{}]{} x [{}]{}", fmt::join(a_dims, ","),
                           trans_a ? "^T" : "", fmt::join(b_dims, ","), trans_b ? "^T" : ""));
  }
  if (is_parameter(b) && b_dims.size() == 2 && !is_constant(a)) {
    Op op = make_op(node, OpKind::linear);
    if (trans_a && a_dims.size() >= 2) std::swap(a_dims[a_dims.size() - 1], a_dims[a_dims.size() - 2]);
    if (a_dims.size() == 1) a_dims.insert(a_dims.begin(), 1);
    op.inputs.push_back({a, to_shape(a_dims)});
    const std::int64_t in = trans_b ? b_dims[1] : b_dims[0];
    const std::int64_t outf = trans_b ? b_dims[0] : b_dims[1];
    // The weight as [in, out] whatever its stored layout: the library packs it once.
    op.weights.push_back({b, Shape{Dim(in), Dim(outf)}});
    if (!bias.empty() && is_parameter(bias)) op.weights.push_back({bias, Shape{Dim(outf)}});
    op.output = {out, to_shape(y)};
    return push(std::move(op));
  }
  // A vector operand is a matrix of one row (left) or one column (right), as MatMul reads it;
  // the output then has those rows or columns too.
  Dims y_dims = y;
  if (a_dims.size() == 1) {
    a_dims.insert(a_dims.begin(), 1);
    y_dims.insert(y_dims.end() - (b_dims.size() == 1 ? 0 : 1), 1);
  }
  if (b_dims.size() == 1) {
    b_dims.push_back(1);
    y_dims.push_back(1);
  }
  if (y_dims.size() < 2) fail(node, fmt::format("its output '{}' is not a matrix", out));
  Op op = make_op(node, OpKind::matmul);
  op.transpose_a = trans_a;
  op.transpose_b = trans_b;
  (is_constant(a) ? op.weights : op.inputs).push_back({a, to_shape(a_dims)});
  (is_constant(b) ? op.weights : op.inputs).push_back({b, to_shape(b_dims)});
  if (op.inputs.empty()) fail(node, "both operands are constants");
  if (op.inputs[0].shape.size() < 2) fail(node, "an operand is not a matrix");
  if (!bias.empty() && is_parameter(bias)) op.weights.push_back(ref(bias, node));
  op.output = {out, to_shape(y_dims)};
  push(std::move(op));
}

void Mapper::emit_pool(const Node& node) {
  const bool global = node.op_type.rfind("Global", 0) == 0;
  const bool max = node.op_type.find("Max") != std::string::npos;
  // A global pool is a kind of its own (make_pool).
  Op op = make_op(node, OpKind::pool, std::string(global ? "global_" : "") + (max ? "max" : "avg"));
  const auto& x = shape_of(node.inputs.at(0), node);
  require_positive(node, node.inputs[0], x);
  op.inputs.push_back({node.inputs[0], to_shape(x)});
  if (global) {
    op.kernel_h = x.size() > 2 ? x[2] : 1;
    op.kernel_w = x.size() > 3 ? x[3] : 1;
    op.stride = 1;
  } else {
    const auto kernel = node.ints_attr("kernel_shape");
    if (kernel.empty()) fail(node, "no kernel_shape");
    const Window win = window_of(node, x, kernel);
    op.kernel_h = kernel.front();
    op.kernel_w = kernel.back();
    op.stride = win.strides.back();
    op.pad = win.pads[win.pads.size() / 2 - 1];
  }
  op.output = {node.outputs.at(0), to_shape(require_output(node, node.outputs.at(0), x.size()))};
  push(std::move(op));
}

}  // namespace truepeak::estimate::onnx_detail::mapping
