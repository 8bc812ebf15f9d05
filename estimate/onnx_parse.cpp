// Reading an ONNX file: protobuf parse, structural checks, binding of the dynamic input
// dimensions, ONNX shape inference. Everything that can go wrong with the file becomes one
// InputError line naming the file. This file runs the steps, in onnx_parse_*.cpp: binding the
// inputs, checking the graph, shapes for nodes without a schema (onnx_parse_detail.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "estimate/onnx_assume.hpp"
#include "estimate/onnx_fold.hpp"
#include "estimate/onnx_graph.hpp"
#include "estimate/onnx_parse_detail.hpp"
#include "estimate/onnx_shape_eval.hpp"

namespace truepeak::estimate::onnx_detail {
namespace parse {

std::string domain_of(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

std::optional<std::pair<std::int32_t, Dims>> known_type(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  Dims dims;
  for (const auto& d : type.tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return std::pair{type.tensor_type().elem_type(), std::move(dims)};
}

}  // namespace parse

using namespace parse;

namespace {

std::string first_line(const std::string& text) {
  auto line = text.substr(0, text.find('\n'));
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

void record_value(const onnx::ValueInfoProto& value, ParsedGraph& parsed) {
  if (!value.type().has_tensor_type()) return;
  if (is_real_type(value.type().tensor_type().elem_type())) parsed.float_tensors.insert(value.name());
  if (auto type = known_type(value.type())) parsed.shapes[value.name()] = std::move(type->second);
}

Node convert_node(const onnx::NodeProto& proto, int index) {
  Node node;
  node.op_type = proto.op_type();
  node.domain = domain_of(proto.domain());
  node.name = proto.name().empty() ? fmt::format("{}_{}", proto.op_type(), index) : proto.name();
  node.inputs.assign(proto.input().begin(), proto.input().end());
  node.outputs.assign(proto.output().begin(), proto.output().end());
  for (const auto& attr : proto.attribute()) {
    switch (attr.type()) {
      case onnx::AttributeProto::INT: node.ints[attr.name()] = {attr.i()}; break;
      case onnx::AttributeProto::INTS: node.ints[attr.name()].assign(attr.ints().begin(), attr.ints().end()); break;
      case onnx::AttributeProto::FLOAT: node.floats[attr.name()] = {attr.f()}; break;
      case onnx::AttributeProto::FLOATS:
        node.floats[attr.name()].assign(attr.floats().begin(), attr.floats().end());
        break;
      case onnx::AttributeProto::STRING: node.strings[attr.name()] = attr.s(); break;
      case onnx::AttributeProto::GRAPH:
      case onnx::AttributeProto::GRAPHS: node.has_subgraph = true; break;
      default: break;
    }
  }
  return node;
}

}  // namespace

std::int64_t Node::int_attr(const std::string& key, std::int64_t fallback) const {
  const auto it = ints.find(key);
  return it == ints.end() || it->second.empty() ? fallback : it->second.front();
}

std::vector<std::int64_t> Node::ints_attr(const std::string& key) const {
  const auto it = ints.find(key);
  return it == ints.end() ? std::vector<std::int64_t>{} : it->second;
}

ParsedGraph parse_onnx(const std::string& bytes, const std::string& where, const OnnxOptions& options) {
  if (bytes.empty()) throw InputError(fmt::format("{}: empty file, not an ONNX model", where));
  onnx::ModelProto model;
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw InputError(fmt::format("{}: not a readable ONNX model (truncated, or not an ONNX protobuf file)", where));
  }
  if (model.ir_version() <= 0 || !model.has_graph()) {
    throw InputError(fmt::format("{}: not an ONNX model (no IR version or no graph)", where));
  }
  if (model.graph().node_size() == 0) throw InputError(fmt::format("{}: the ONNX graph has no nodes", where));

  ParsedGraph parsed;
  parsed.where = where;
  parsed.file_nodes = model.graph().node_size();
  parsed.producer = fmt::format("{} {}", model.producer_name(), model.producer_version());
  while (!parsed.producer.empty() && parsed.producer.back() == ' ') parsed.producer.pop_back();
  for (const auto& opset : model.opset_import()) {
    if (domain_of(opset.domain()).empty()) parsed.opset = opset.version();
  }
  if (parsed.opset == 0) throw InputError(fmt::format("{}: the model imports no default-domain opset", where));
  const auto max_opset = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at("").second;
  if (parsed.opset > max_opset) {
    parsed.warnings.push_back(fmt::format(
        "opset {} is newer than this ONNX library knows ({}): ops changed since may get no shapes",
        parsed.opset, max_opset));
  }

  auto* graph = model.mutable_graph();
  check_structure(*graph, where);
  check_attributes(*graph, where);
  for (const auto& init : graph->initializer()) {
    parsed.initializers.insert(init.name());
    if (is_real_type(init.data_type())) parsed.float_tensors.insert(init.name());
    parsed.shapes[init.name()] = std::vector<std::int64_t>(init.dims().begin(), init.dims().end());
  }
  parsed.batch = bind_inputs(*graph, parsed.initializers, options, where);

  // Inference recomputes every intermediate shape from the bound inputs; shapes written in the
  // file for another binding would conflict, so only element types are kept.
  graph->clear_value_info();
  for (auto& out : *graph->mutable_output()) {
    if (out.type().has_tensor_type()) out.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  // error_mode 0: a node whose shape cannot be inferred is left without one (reported where it
  // matters) rather than failing the whole model. Shape arithmetic that inference cannot follow
  // is folded between passes, until nothing new folds. Each pass makes at least one tensor
  // known, and a chain of blocks whose shapes each wait on the block before (ShuffleNet's channel
  // shuffles) needs a pass per block. Each pass infers the whole graph, so a file built to make
  // one tensor known a pass would take time quadratic in its nodes: the passes stop at the node
  // count or kMaxInferencePasses, far above the blocks of real networks (a ShuffleNet has 16).
  constexpr int kMaxInferencePasses = 256;
  const onnx::ShapeInferenceOptions inference_options(false, 0, true);
  std::map<std::string, onnx::ValueInfoProto> assumed;
  std::map<std::string, int> guessed;
  std::vector<OnnxAssumption> assumptions;
  const std::int64_t data_dependent_size = options.data_dependent_size.value_or(kDataDependentSize);
  if (data_dependent_size < 1) {
    throw InputError(
        fmt::format("{}: the size assumed for dimensions computed from data "
                    "(--data-dependent-size) must be 1 or more, not {}",
                    where, data_dependent_size));
  }
  for (int pass = 0; pass <= std::min(graph->node_size(), kMaxInferencePasses); ++pass) {
    try {
      graph->clear_value_info();
      for (const auto& [name, value] : assumed) *graph->add_value_info() = value;
      fill_kernel_shapes(*graph);
      std::unordered_map<std::string, onnx::TensorShapeProto> propagated;
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), inference_options, &propagated);
    } catch (const std::exception& e) {
      throw InputError(fmt::format("{}: ONNX shape inference failed: {}", where, first_line(e.what())));
    }
    const int folded = fold_shape_tensors(model);
    // A node without a schema waits for all its inputs' shapes while other passes make progress;
    // a size computed from data is assumed only once nothing else gives shapes.
    if (folded == 0 && assume_shapes(model, assumed, guessed, true) == 0 &&
        assume_shapes(model, assumed, guessed, false) == 0 &&
        assume_data_dependent(model, assumed, assumptions, data_dependent_size) == 0)
      break;
  }
  for (const auto& [type, count] : guessed) {
    parsed.warnings.push_back(fmt::format(
        "{} x{}: this ONNX library has no shape inference for it; its outputs are taken to have the "
        "shape of its first floating-point activation (else of its first input)",
        type, count));
  }
  parsed.assumptions = summarize_assumptions(std::move(assumptions));
  for (auto& line : assumption_warnings(parsed.assumptions))
    parsed.warnings.push_back(std::move(line));
  parsed.data_shaped = data_shaped_tensors(*graph);
  // The folded values are initializers: constants to the op mapping, never parameters.
  for (const auto& init : graph->initializer()) {
    if (parsed.initializers.insert(init.name()).second) {
      parsed.shapes[init.name()] = std::vector<std::int64_t>(init.dims().begin(), init.dims().end());
    }
    if (init.dims_size() <= 1 && (init.dims_size() == 0 || init.dims(0) <= 8)) {
      if (const auto value = known_from_proto(init))
        parsed.small_values[init.name()] = describe(*value);
    }
  }

  for (const auto& input : graph->input()) {
    if (!parsed.initializers.count(input.name())) {
      parsed.inputs.push_back(input.name());
      record_value(input, parsed);
    }
  }
  for (const auto& value : graph->value_info()) record_value(value, parsed);
  for (const auto& out : graph->output()) {
    parsed.outputs.push_back(out.name());
    record_value(out, parsed);
  }
  for (int i = 0; i < graph->node_size(); ++i) {
    const auto& proto = graph->node(i);
    // Constant nodes carry their value, not a shape in value_info, when inference skips them.
    if (proto.op_type() == "Constant") {
      for (const auto& attr : proto.attribute()) {
        if (attr.name() == "value" && attr.has_t() && proto.output_size() == 1) {
          parsed.shapes.emplace(proto.output(0),
                                std::vector<std::int64_t>(attr.t().dims().begin(), attr.t().dims().end()));
          if (is_real_type(attr.t().data_type())) parsed.float_tensors.insert(proto.output(0));
        }
      }
    }
    parsed.nodes.push_back(convert_node(proto, i));
  }
  return parsed;
}

}  // namespace truepeak::estimate::onnx_detail
