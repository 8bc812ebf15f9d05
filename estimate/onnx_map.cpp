// ONNX nodes -> estimator ops, with the rewrites an inference runtime applies. The mapping table
// is in onnx_import.hpp; the rewrites, and why each one:
// - constant subgraphs (Shape/Gather/Concat chains feeding Reshape, masks built from Range) are
//   computed once at load time by every runtime: free;
// - BatchNormalization after a Conv folds into it; MatMul + Add(bias) is one linear with a bias
//   epilogue; a Transpose that only swaps the last two axes of a MatMul operand is a transposed
//   GEMM operand, not a copy;
// - elementwise regions that exporters produce for one framework op (erf/tanh GELU, SiLU,
//   HardSwish, LayerNorm/RMSNorm from ReduceMean/Sub/Pow/Sqrt/Div, Softmax from
//   ReduceMax/Exp/ReduceSum/Div) become that one op again;
// - optionally, an activation right after a GEMM/conv is folded into it (epilogue fusion).
// Node types it does not know are costed memory-bound on their tensors and counted.
// This file holds the Mapper's tensor facts and its result; onnx_map_detail.hpp says where the
// rest is.
#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "estimate/onnx_graph.hpp"
#include "estimate/onnx_map_detail.hpp"

namespace truepeak::estimate::onnx_detail {
namespace mapping {

const std::set<std::string>& unary_ops() {
  static const std::set<std::string> ops = {
      "Relu", "Gelu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Clip",
      "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Mish",
      "Sin", "Cos", "Floor", "Ceil", "Round", "Sign", "Not", "IsNaN", "IsInf", "ThresholdedRelu", "Cast",
      "CastLike", "PRelu"};
  return ops;
}
const std::set<std::string>& binary_ops() {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod",
                                            "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
                                            "And", "Or", "Xor", "Where", "Sum", "Mean", "BitShift"};
  return ops;
}
const std::set<std::string>& reduce_ops() {
  static const std::set<std::string> ops = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
                                            "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                                            "ReduceLogSumExp", "ArgMax", "ArgMin"};
  return ops;
}

std::int64_t numel(const Dims& dims) {
  std::int64_t n = 1;
  for (const auto d : dims) n = checked_mul(n, d).value_or(std::numeric_limits<std::int64_t>::max());
  return n;
}

Mapper::Mapper(ParsedGraph graph, const OnnxOptions& options) : g_(std::move(graph)), options_(options) {
  for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
    for (const auto& out : g_.nodes[i].outputs) producer_[out] = static_cast<int>(i);
    for (const auto& in : g_.nodes[i].inputs) {
      if (!in.empty()) consumers_[in].push_back(static_cast<int>(i));
    }
  }
  for (const auto& out : g_.outputs) consumers_[out].push_back(-1);
  done_.assign(g_.nodes.size(), false);
}

OnnxImport Mapper::run() {
  fold_constants();
  if (options_.rules.fold_batchnorm) fuse_batchnorm_into_conv();
  fuse_bias_into_gemm();
  fold_transposes_into_matmul();
  find_framework_regions();
  for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
    if (!done_[i]) emit(static_cast<int>(i));
  }
  finish();
  return std::move(result_);
}

const Dims& Mapper::shape_of(const std::string& t, const Node& node) const {
  const auto it = g_.shapes.find(t);
  if (it == g_.shapes.end()) {
    throw InputError(fmt::format("{}: the shape of '{}' (read by node '{}', {}) is unknown{}",
                                 g_.where, t, node.name, node.op_type, why_unshaped(t)));
  }
  return it->second;
}

std::string Mapper::why_unshaped(const std::string& t) const {
  std::string current = t;
  std::set<std::string> seen;
  int root = -1;
  while (seen.insert(current).second) {
    const auto writer = producer_.find(current);
    if (writer == producer_.end()) break;
    root = writer->second;
    const auto& inputs = g_.nodes[root].inputs;
    const auto next = std::find_if(inputs.begin(), inputs.end(), [&](const std::string& in) {
      return !in.empty() && !has_shape(in) && producer_.count(in) && !seen.count(in);
    });
    if (next == inputs.end()) break;
    current = *next;
  }
  std::string bound;
  for (const auto& in : g_.inputs) {
    const auto s = g_.shapes.find(in);
    if (s != g_.shapes.end())
      bound += fmt::format("{}{} [{}]", bound.empty() ? "" : ", ", in, fmt::join(s->second, ","));
  }
  const std::string give = fmt::format(
      "the inputs are bound to {}; give other input shapes with --input-shape NAME=DIMS, and the "
      "size taken for dimensions computed from data with --data-dependent-size N",
      bound.empty() ? "nothing" : bound);
  if (root < 0) return fmt::format(" after ONNX shape inference; {}", give);
  const Node& r = g_.nodes[root];
  std::string read;
  for (const auto& in : r.inputs) {
    if (in.empty()) continue;
    const auto s = g_.shapes.find(in);
    const auto v = g_.small_values.find(in);
    read += fmt::format("{}'{}' {}{}", read.empty() ? "" : ", ", in,
                        s == g_.shapes.end() ? std::string("(shape unknown)")
                                             : fmt::format("[{}]", fmt::join(s->second, ",")),
                        v == g_.small_values.end() ? std::string() : " = " + v->second);
  }
  const bool from_data =
      std::any_of(r.outputs.begin(), r.outputs.end(),
                  [&](const std::string& o) { return g_.data_shaped.count(o) > 0; });
  return fmt::format(
      ": the first op whose output shape could not be evaluated is '{}' ({}), reading {}; {}; {}",
      r.name, r.op_type, read.empty() ? "nothing" : read,
      from_data ? "its output size depends on the data, and its rank is unknown"
                : "its output shape depends on values not computed from the input shapes",
      give);
}

bool Mapper::is_parameter(const std::string& t) const {
  return is_constant(t) && !t.empty() && g_.float_tensors.count(t) && has_shape(t) &&
         numel(g_.shapes.at(t)) > 1;
}

int Mapper::single_consumer(const std::string& t) const {
  const auto it = consumers_.find(t);
  if (it == consumers_.end() || it->second.size() != 1) return -1;
  return it->second.front();
}

std::optional<TensorRef> Mapper::ref_if_known(const std::string& t, const Node& node) {
  if (t.empty()) return std::nullopt;
  if (!has_shape(t)) {
    if (unshaped_.insert(t).second) {
      result_.warnings.push_back(fmt::format("shape of '{}' ({} '{}') unknown after shape inference: "
                                             "not counted in its bytes",
                                             t, node.op_type, node.name));
    }
    return std::nullopt;
  }
  return ref(t, node);
}

void Mapper::fail(const Node& node, const std::string& why) const {
  throw InputError(fmt::format("{}: node '{}' ({}): {}", g_.where, node.name, node.op_type, why));
}

const Dims& Mapper::require_output(const Node& node, const std::string& out, std::size_t rank) const {
  const auto it = g_.shapes.find(out);
  if (it == g_.shapes.end())
    fail(node, fmt::format("the shape of its output '{}' is unknown after ONNX shape inference (do its "
                           "attributes fit its inputs?)",
                           out));
  if (rank != 0 && it->second.size() != rank)
    fail(node, fmt::format("its output '{}' has {} dimensions, expected {}", out, it->second.size(), rank));
  require_positive(node, out, it->second);
  return it->second;
}

void Mapper::require_positive(const Node& node, const std::string& tensor, const Dims& dims) const {
  if (std::any_of(dims.begin(), dims.end(), [](std::int64_t d) { return d < 1; }))
    fail(node, fmt::format("'{}' is empty ([{}]): a product or window over it does no work", tensor,
                           fmt::join(dims, ",")));
}

void Mapper::finish() {
  auto& model = result_.model;
  for (const auto& in : g_.inputs) {
    const auto it = g_.shapes.find(in);
    model.forward.inputs.push_back({in, it == g_.shapes.end() ? Shape{} : to_shape(it->second)});
  }
  result_.onnx_nodes = g_.file_nodes;
  result_.batch = g_.batch;
  result_.assumptions = g_.assumptions;
  if (!result_.unknown_ops.empty()) {
    int total = 0;
    for (const auto& entry : result_.unknown_ops) total += entry.second;
    result_.warnings.insert(result_.warnings.begin(),
                            fmt::format("{} node(s) of types the importer does not know, costed as "
                                        "memory-bound on their tensors: {}",
                                        total, count_list(result_.unknown_ops)));
  }
  for (auto& w : g_.warnings) result_.warnings.push_back(w);
  model.kind = "onnx";
  model.description = fmt::format("ONNX opset {}{}: {} nodes -> {} ops ({} constant-folded)",
                                  g_.opset, g_.producer.empty() ? "" : ", from " + g_.producer,
                                  g_.file_nodes, model.forward.ops.size(), folded_);
}

}  // namespace mapping

bool is_unary_elementwise(const std::string& op_type) { return mapping::unary_ops().count(op_type) > 0; }
bool is_binary_elementwise(const std::string& op_type) { return mapping::binary_ops().count(op_type) > 0; }

OnnxImport map_onnx(ParsedGraph graph, const OnnxOptions& options) {
  mapping::Mapper mapper(std::move(graph), options);
  return mapper.run();
}

}  // namespace truepeak::estimate::onnx_detail
