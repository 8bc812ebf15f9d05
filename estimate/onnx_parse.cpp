// Reading an ONNX file: protobuf parse, structural checks, binding of the dynamic input
// dimensions, ONNX shape inference. Everything that can go wrong with the file becomes one
// InputError line naming the file.
#include <algorithm>
#include <cctype>
#include <exception>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "core/error.hpp"
#include "estimate/onnx_fold.hpp"
#include "estimate/onnx_graph.hpp"

namespace truepeak::estimate::onnx_detail {
namespace {

std::string first_line(const std::string& text) {
  auto line = text.substr(0, text.find('\n'));
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

bool is_float_type(std::int32_t elem_type) {
  using T = onnx::TensorProto;
  return elem_type == T::FLOAT || elem_type == T::FLOAT16 || elem_type == T::BFLOAT16 ||
         elem_type == T::DOUBLE;
}

bool is_integer_type(std::int32_t elem_type) {
  using T = onnx::TensorProto;
  return elem_type == T::INT64 || elem_type == T::INT32 || elem_type == T::INT16 || elem_type == T::INT8 ||
         elem_type == T::UINT8 || elem_type == T::UINT16 || elem_type == T::UINT32 || elem_type == T::UINT64;
}

// Which option a dynamic dimension takes, from its name and place.
enum class DimRole { batch, seq, unknown };

DimRole dim_role(const std::string& param, int index, bool integer_input) {
  const auto name = lower(param);
  for (const char* key : {"batch", "bsz"}) {
    if (name.find(key) != std::string::npos) return DimRole::batch;
  }
  if (name == "n" || name == "b") return DimRole::batch;
  for (const char* key : {"seq", "sequence", "len", "token", "time"}) {
    if (name.find(key) != std::string::npos) return DimRole::seq;
  }
  if (name == "s" || name == "t" || name == "l") return DimRole::seq;
  if (index == 0) return DimRole::batch;
  if (index == 1 && integer_input) return DimRole::seq;
  return DimRole::unknown;
}

std::string dims_str(const std::vector<std::int64_t>& dims) {
  return fmt::format("{}", fmt::join(dims, "x"));
}

// Gives every dimension of every graph input a value, or throws naming the one that has none.
void bind_inputs(onnx::GraphProto& graph, const std::set<std::string>& initializers,
                 const OnnxOptions& options, const std::string& where) {
  std::set<std::string> input_names;
  for (auto& input : *graph.mutable_input()) {
    if (initializers.count(input.name())) continue;
    input_names.insert(input.name());
    auto* type = input.mutable_type();
    if (!type->has_tensor_type()) {
      throw InputError(fmt::format("{}: input '{}' is not a tensor (sequences and maps are not supported)",
                                   where, input.name()));
    }
    auto* tensor = type->mutable_tensor_type();
    const auto given = std::find_if(options.input_shapes.begin(), options.input_shapes.end(),
                                    [&](const InputShape& s) { return s.name == input.name(); });
    if (given != options.input_shapes.end()) {
      if (tensor->has_shape() && tensor->shape().dim_size() != static_cast<int>(given->dims.size())) {
        throw InputError(fmt::format("{}: --input-shape {}={} has rank {}, the input has rank {}", where,
                                     given->name, dims_str(given->dims), given->dims.size(),
                                     tensor->shape().dim_size()));
      }
      auto* shape = tensor->mutable_shape();
      shape->clear_dim();
      for (auto d : given->dims) shape->add_dim()->set_dim_value(d);
      continue;
    }
    if (!tensor->has_shape()) {
      throw InputError(fmt::format("{}: input '{}' has no shape in the file; give it with --input-shape {}=DIMS",
                                   where, input.name(), input.name()));
    }
    const bool integer_input = is_integer_type(tensor->elem_type());
    auto* shape = tensor->mutable_shape();
    for (int i = 0; i < shape->dim_size(); ++i) {
      auto* dim = shape->mutable_dim(i);
      if (dim->has_dim_value() && dim->dim_value() > 0) {
        if (i == 0 && shape->dim_size() >= 2 && options.batch && dim->dim_value() != *options.batch) {
          throw InputError(fmt::format(
              "{}: input '{}' has a fixed batch of {} in the file, not {}; export the model with a "
              "dynamic batch axis or for that batch",
              where, input.name(), dim->dim_value(), *options.batch));
        }
        continue;
      }
      const std::string param = dim->has_dim_param() ? dim->dim_param() : std::string();
      const auto role = dim_role(param, i, integer_input);
      std::optional<std::int64_t> value;
      if (role == DimRole::batch) value = options.batch;
      if (role == DimRole::seq) value = options.seq;
      if (!value) {
        const char* flag = role == DimRole::batch ? " (--batch)" : role == DimRole::seq ? " (--seq)" : "";
        throw InputError(fmt::format(
            "{}: dimension {} ('{}') of input '{}' is dynamic and has no value{}; give the whole shape "
            "with --input-shape {}=DIMS",
            where, i, param.empty() ? "?" : param, input.name(), flag, input.name()));
      }
      dim->clear_dim_param();
      dim->set_dim_value(*value);
    }
  }
  for (const auto& given : options.input_shapes) {
    if (!input_names.count(given.name)) {
      std::string names;
      for (const auto& n : input_names) names += (names.empty() ? "" : ", ") + n;
      throw InputError(fmt::format("{}: --input-shape names '{}', but the model's inputs are: {}", where,
                                   given.name, names));
    }
  }
}

// Every node reads only what the graph inputs, the initializers or an earlier node define.
void check_structure(const onnx::GraphProto& graph, const std::string& where) {
  std::set<std::string> defined;
  for (const auto& input : graph.input()) defined.insert(input.name());
  for (const auto& init : graph.initializer()) defined.insert(init.name());
  for (const auto& init : graph.sparse_initializer()) defined.insert(init.values().name());
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    if (node.op_type().empty()) throw InputError(fmt::format("{}: node {} has no op type", where, i));
    for (const auto& in : node.input()) {
      if (!in.empty() && !defined.count(in)) {
        throw InputError(fmt::format(
            "{}: node '{}' ({}) reads '{}', which no graph input, initializer or earlier node defines", where,
            node.name().empty() ? std::to_string(i) : node.name(), node.op_type(), in));
      }
    }
    for (const auto& out : node.output()) defined.insert(out);
  }
  for (const auto& out : graph.output()) {
    if (!defined.count(out.name())) {
      throw InputError(fmt::format("{}: graph output '{}' is not defined by any node", where, out.name()));
    }
  }
}

void record_value(const onnx::ValueInfoProto& value, ParsedGraph& parsed) {
  if (!value.type().has_tensor_type()) return;
  const auto& tensor = value.type().tensor_type();
  if (is_float_type(tensor.elem_type())) parsed.float_tensors.insert(value.name());
  if (!tensor.has_shape()) return;
  std::vector<std::int64_t> dims;
  for (const auto& d : tensor.shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return;
    dims.push_back(d.dim_value());
  }
  parsed.shapes[value.name()] = std::move(dims);
}

Node convert_node(const onnx::NodeProto& proto, int index) {
  Node node;
  node.op_type = proto.op_type();
  node.domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
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
  parsed.producer = fmt::format("{} {}", model.producer_name(), model.producer_version());
  while (!parsed.producer.empty() && parsed.producer.back() == ' ') parsed.producer.pop_back();
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") parsed.opset = opset.version();
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
  for (const auto& init : graph->initializer()) {
    parsed.initializers.insert(init.name());
    if (is_float_type(init.data_type())) parsed.float_tensors.insert(init.name());
    parsed.shapes[init.name()] = std::vector<std::int64_t>(init.dims().begin(), init.dims().end());
  }
  bind_inputs(*graph, parsed.initializers, options, where);

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
  // shuffles) needs a pass per block: the bound is the node count, never reached in practice.
  const onnx::ShapeInferenceOptions inference_options(false, 0, true);
  for (int pass = 0; pass <= graph->node_size(); ++pass) {
    try {
      graph->clear_value_info();
      std::unordered_map<std::string, onnx::TensorShapeProto> propagated;
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), inference_options, &propagated);
    } catch (const std::exception& e) {
      throw InputError(fmt::format("{}: ONNX shape inference failed: {}", where, first_line(e.what())));
    }
    if (fold_shape_tensors(model) == 0) break;
  }
  // The folded values are int64 initializers: constants to the op mapping, never parameters.
  for (const auto& init : graph->initializer()) {
    if (parsed.initializers.insert(init.name()).second) {
      parsed.shapes[init.name()] = std::vector<std::int64_t>(init.dims().begin(), init.dims().end());
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
          if (is_float_type(attr.t().data_type())) parsed.float_tensors.insert(proto.output(0));
        }
      }
    }
    parsed.nodes.push_back(convert_node(proto, i));
  }
  return parsed;
}

}  // namespace truepeak::estimate::onnx_detail
