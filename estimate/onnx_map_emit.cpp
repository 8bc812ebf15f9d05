// The ops the Mapper emits for ONNX nodes other than GEMMs, convolutions and pools, and where
// each goes: epilogue fusion into the GEMM or convolution before it, or the model's op list.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/text.hpp"
#include "estimate/builder.hpp"
#include "estimate/onnx_map_detail.hpp"

namespace truepeak::estimate::onnx_detail::mapping {
namespace {

// Pure views or no-ops at inference: no data moves.
const std::set<std::string>& view_ops() {
  static const std::set<std::string> ops = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity",
                                            "Dropout", "Slice", "Split"};
  return ops;
}
// Real copies: every output element written once, as much read.
const std::set<std::string>& copy_ops() {
  static const std::set<std::string> ops = {"Expand", "Tile", "Pad", "Resize", "Upsample", "GatherElements",
                                            "GatherND", "ScatterND", "ScatterElements", "DepthToSpace",
                                            "SpaceToDepth", "TopK", "Trilu", "CumSum", "OneHot"};
  return ops;
}


}  // namespace

Op Mapper::make_op(const Node& node, OpKind kind, std::string fn) {
  Op op;
  op.name = node.name;
  op.kind = kind;
  op.fn = std::move(fn);
  return op;
}

void Mapper::push(Op op) {
  // Epilogue fusion: an activation whose input is the single-use result of a GEMM/conv.
  const auto& only = options_.rules.fused_activations;
  if (options_.rules.fuse_activations && op.kind == OpKind::elementwise && op.inputs.size() == 1 &&
      op.weights.empty() && epilogue_activations().count(op.fn) &&
      (only.empty() || std::find(only.begin(), only.end(), op.fn) != only.end())) {
    const auto it = op_writing_.find(op.inputs[0].name);
    if (it != op_writing_.end() && effective_uses(op.inputs[0].name) == 1) {
      Op& gemm = result_.model.forward.ops[it->second];
      if ((gemm.kind == OpKind::conv2d || gemm.kind == OpKind::linear || gemm.kind == OpKind::matmul) &&
          gemm.output.shape == op.output.shape) {
        gemm.output = op.output;
        op_writing_.erase(it);
        op_writing_[gemm.output.name] = static_cast<std::size_t>(&gemm - result_.model.forward.ops.data());
        count_fusion(fmt::format("{} epilogue into {}", op.fn, to_string(gemm.kind)));
        return;
      }
    }
  }
  op_writing_[op.output.name] = result_.model.forward.ops.size();
  result_.model.forward.ops.push_back(std::move(op));
}

std::size_t Mapper::effective_uses(const std::string& t) const {
  const auto it = consumers_.find(t);
  if (it == consumers_.end()) return 0;
  std::set<int> readers;
  for (int c : it->second) {
    const auto rep = representative_.find(c);
    readers.insert(rep == representative_.end() ? c : rep->second);
  }
  return readers.size();
}

const std::set<std::string>& Mapper::epilogue_activations() {
  static const std::set<std::string> fns = {"relu", "clip", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh",
                                            "leakyrelu", "hardswish", "elu"};
  return fns;
}

void Mapper::emit(int index) {
  const Node& node = g_.nodes[index];
  if (const auto r = regions_.find(index); r != regions_.end()) return emit_region(node, r->second);
  const std::string& type = node.op_type;
  if (!node.domain.empty() && node.domain != "ai.onnx") return emit_unknown(node);
  if (type == "Conv") return emit_conv(index, node);
  if (type == "Gemm" || type == "MatMul") return emit_gemm(index, node);
  if (type == "BatchNormalization" || type == "LayerNormalization" || type == "InstanceNormalization" ||
      type == "GroupNormalization" || type == "LpNormalization" || type == "MeanVarianceNormalization" ||
      type == "LRN") {
    return emit_norm(node);
  }
  if (type == "Softmax" || type == "LogSoftmax") return emit_simple(node, OpKind::softmax, "");
  if (type == "MaxPool" || type == "AveragePool" || type == "GlobalAveragePool" || type == "GlobalMaxPool" ||
      type == "LpPool") {
    return emit_pool(node);
  }
  if (type == "Gather") return emit_gather(node);
  if (view_ops().count(type)) return emit_view(node);
  if (type == "Transpose") return emit_copy(node, OpKind::transpose);
  if (type == "Concat") return emit_concat(node);
  if (copy_ops().count(type)) return emit_copy(node, OpKind::transpose);
  if (unary_ops().count(type) || binary_ops().count(type) || reduce_ops().count(type)) {
    return emit_simple(node, OpKind::elementwise, ascii_lower(type));
  }
  if (type == "ConstantOfShape" || type == "Range") return emit_simple(node, OpKind::elementwise, ascii_lower(type));
  emit_unknown(node);
}

void Mapper::add_operands(Op& op, const Node& node, std::size_t first) {
  for (std::size_t i = first; i < node.inputs.size(); ++i) {
    const auto& t = node.inputs[i];
    if (t.empty()) continue;
    if (is_constant(t)) {
      if (is_parameter(t)) op.weights.push_back(ref(t, node));
      continue;
    }
    if (auto r = ref_if_known(t, node)) op.inputs.push_back(*r);
  }
}

bool Mapper::set_output(Op& op, const Node& node, const std::string& out) {
  if (auto r = ref_if_known(out, node)) {
    op.output = *r;
    return true;
  }
  op.output = TensorRef{out, {}};
  return false;
}

void Mapper::emit_simple(const Node& node, OpKind kind, std::string fn) {
  Op op = make_op(node, kind, std::move(fn));
  add_operands(op, node);
  set_output(op, node, node.outputs.at(0));
  push(std::move(op));
}

void Mapper::emit_region(const Node& node, const Region& region) {
  Op op = make_op(node, region.kind, region.fn);
  op.name = fmt::format("{}:{}", node.name, region.fn.empty() ? "softmax" : region.fn);
  if (auto r = ref_if_known(region.input, node)) op.inputs.push_back(*r);
  for (const auto& w : region.weights) op.weights.push_back(ref(w, node));
  set_output(op, node, region.output);
  push(std::move(op));
}

void Mapper::emit_norm(const Node& node) {
  static const std::map<std::string, std::string> fns = {
      {"BatchNormalization", "batchnorm"}, {"LayerNormalization", "layernorm"},
      {"InstanceNormalization", "instancenorm"}, {"GroupNormalization", "groupnorm"},
      {"LpNormalization", "lpnorm"}, {"MeanVarianceNormalization", "mvn"}, {"LRN", "lrn"}};
  Op op = make_op(node, OpKind::norm, fns.at(node.op_type));
  add_operands(op, node);
  set_output(op, node, node.outputs.at(0));
  push(std::move(op));
}

void Mapper::emit_gather(const Node& node) {
  const auto& data = node.inputs.at(0);
  if (is_parameter(data) && node.int_attr("axis", 0) == 0 && g_.shapes.at(data).size() == 2) {
    Op op = make_op(node, OpKind::embedding);
    if (auto r = ref_if_known(node.inputs.at(1), node)) op.inputs.push_back(*r);
    op.weights.push_back(ref(data, node));
    set_output(op, node, node.outputs.at(0));
    return push(std::move(op));
  }
  emit_copy(node, OpKind::transpose);
}

void Mapper::emit_view(const Node& node) {
  const auto& x = node.inputs.empty() ? std::string() : node.inputs.front();
  for (const auto& out : node.outputs) {
    Op op = make_op(node, OpKind::reshape);
    if (node.outputs.size() > 1) op.name = fmt::format("{}:{}", node.name, out);
    if (!is_constant(x)) {
      if (auto r = ref_if_known(x, node)) op.inputs.push_back(*r);
    }
    set_output(op, node, out);
    push(std::move(op));
  }
}

void Mapper::emit_copy(const Node& node, OpKind kind) {
  Op op = make_op(node, kind, kind == OpKind::transpose && node.op_type != "Transpose" ? ascii_lower(node.op_type) : "");
  const bool known = set_output(op, node, node.outputs.at(0));
  if (node.op_type == "Transpose") {
    auto perm = node.ints_attr("perm");
    if (perm.empty())  // without perm, the axes reversed
      for (auto a = static_cast<std::int64_t>(op.output.shape.size()) - 1; a >= 0; --a) perm.push_back(a);
    op.fn = transpose_fn(perm);
  }
  if (!node.inputs.empty() && !is_constant(node.inputs[0]) && known) {
    op.inputs.push_back({node.inputs[0], op.output.shape});
  }
  push(std::move(op));
}

void Mapper::emit_concat(const Node& node) {
  Op op = make_op(node, OpKind::concat);
  op.axis = static_cast<int>(node.int_attr("axis", 0));
  for (const auto& t : node.inputs) {
    if (auto r = ref_if_known(t, node)) (is_constant(t) ? op.weights : op.inputs).push_back(*r);
  }
  set_output(op, node, node.outputs.at(0));
  push(std::move(op));
}

void Mapper::emit_unknown(const Node& node) {
  const std::string type = node.domain.empty() ? node.op_type : node.domain + "." + node.op_type;
  ++result_.unknown_ops[type];
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    Op op = make_op(node, OpKind::elementwise, "unknown:" + type);
    if (node.outputs.size() > 1) op.name = fmt::format("{}:{}", node.name, node.outputs[i]);
    if (i == 0) {
      for (const auto& t : node.inputs) {
        if (t.empty()) continue;
        if (auto r = ref_if_known(t, node)) (is_parameter(t) ? op.weights : op.inputs).push_back(*r);
      }
    }
    set_output(op, node, node.outputs[i]);
    push(std::move(op));
  }
}

}  // namespace truepeak::estimate::onnx_detail::mapping
