// Reading an ONNX file: protobuf parse, structural checks, binding of the dynamic input
// dimensions, ONNX shape inference. Everything that can go wrong with the file becomes one
// InputError line naming the file.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cctype>
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
#include "estimate/onnx_shape_eval.hpp"

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

// "" for the default ONNX domain, however the file spells it.
std::string domain_of(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

// Which option a dynamic dimension takes, from its name and place.
enum class DimRole { batch, seq, context, unknown };

DimRole dim_role(const std::string& param, int index, bool integer_input) {
  const auto name = lower(param);
  for (const char* key : {"batch", "bsz"}) {
    if (name.find(key) != std::string::npos) return DimRole::batch;
  }
  // Before the sequence names: "past_sequence_length" is the cache's length.
  for (const char* key : {"past", "cache", "context", "kv"}) {
    if (name.find(key) != std::string::npos) return DimRole::context;
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

// The terms of "a + b + 1", trimmed.
std::vector<std::string> split_sum(const std::string& text) {
  std::vector<std::string> terms;
  std::size_t pos = 0;
  while (true) {
    const auto plus = text.find('+', pos);
    auto term = text.substr(pos, plus == std::string::npos ? std::string::npos : plus - pos);
    const auto first = term.find_first_not_of(" \t");
    const auto last = term.find_last_not_of(" \t");
    terms.push_back(first == std::string::npos ? std::string() : term.substr(first, last - first + 1));
    if (plus == std::string::npos) return terms;
    pos = plus + 1;
  }
}

std::string dims_str(const std::vector<std::int64_t>& dims) {
  return fmt::format("{}", fmt::join(dims, "x"));
}

const InputShape* given_shape(const OnnxOptions& options, const std::string& name) {
  const auto it = std::find_if(options.input_shapes.begin(), options.input_shapes.end(),
                               [&](const InputShape& s) { return s.name == name; });
  return it == options.input_shapes.end() ? nullptr : &*it;
}

// Whether --input-shape's `given` for `tensor` fixes the batch: the given shape has the input's
// rank (2 or more) and fills its first dimension where that is a dynamic batch (named or placed
// as one), or changes it where the file fixes it. A given shape that keeps a fixed first
// dimension (a [1, 16, 64] table broadcast over the batch) says nothing of the batch.
bool gives_batch(const onnx::TypeProto_Tensor& tensor, const InputShape& given) {
  if (!tensor.has_shape() || tensor.shape().dim_size() < 2 ||
      tensor.shape().dim_size() != static_cast<int>(given.dims.size()))
    return false;
  const auto& first = tensor.shape().dim(0);
  if (first.has_dim_value() && first.dim_value() > 0) return first.dim_value() != given.dims[0];
  return dim_role(first.has_dim_param() ? first.dim_param() : "", 0, is_integer_type(tensor.elem_type())) ==
         DimRole::batch;
}

// The batch the inputs take: one that --input-shape gives (for an input whose first dimension is
// its batch), else --batch.
std::optional<std::int64_t> resolve_batch(const onnx::GraphProto& graph, const std::set<std::string>& initializers,
                                          const OnnxOptions& options, const std::string& where) {
  std::optional<std::int64_t> from_shape;
  for (const auto& input : graph.input()) {
    if (initializers.count(input.name()) || !input.type().has_tensor_type()) continue;
    const auto* given = given_shape(options, input.name());
    if (!given || !gives_batch(input.type().tensor_type(), *given)) continue;
    if (from_shape && *from_shape != given->dims[0]) {
      throw InputError(fmt::format("{}: the --input-shape values give the batch dimension {} and {}", where,
                                   *from_shape, given->dims[0]));
    }
    from_shape = given->dims[0];
    if (options.batch && !options.batch_is_default && *options.batch != *from_shape) {
      throw InputError(fmt::format(
          "{}: --input-shape {}={} fixes the batch at {}, but batch {} is asked for (--batch, "
          "--sweep-batch); give the batch in one place",
          where, given->name, dims_str(given->dims), *from_shape, *options.batch));
    }
  }
  return from_shape ? from_shape : options.batch;
}

// Gives every dimension of every graph input a value, or throws naming the one that has none.
// Returns the batch the inputs were bound to, when one of them has a batch dimension.
std::optional<std::int64_t> bind_inputs(onnx::GraphProto& graph, const std::set<std::string>& initializers,
                                        const OnnxOptions& options, const std::string& where) {
  const auto batch = resolve_batch(graph, initializers, options, where);
  bool has_batch = false;
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
    if (const auto* given = given_shape(options, input.name())) {
      if (tensor->has_shape() && tensor->shape().dim_size() != static_cast<int>(given->dims.size())) {
        throw InputError(fmt::format("{}: --input-shape {}={} has rank {}, the input has rank {}", where,
                                     given->name, dims_str(given->dims), given->dims.size(),
                                     tensor->shape().dim_size()));
      }
      if (gives_batch(*tensor, *given)) has_batch = true;
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
        if (i == 0 && shape->dim_size() >= 2 && batch) {
          if (dim->dim_value() != *batch) {
            throw InputError(fmt::format(
                "{}: input '{}' has a fixed batch of {} in the file, not {}; give --batch {} (its only "
                "batch), its whole shape with --input-shape, or export the model with a dynamic batch axis",
                where, input.name(), dim->dim_value(), *batch, dim->dim_value()));
          }
          has_batch = true;
        }
        continue;
      }
      const std::string param = dim->has_dim_param() ? dim->dim_param() : std::string();
      const auto value_of = [&](DimRole role) -> std::optional<std::int64_t> {
        if (role == DimRole::batch) return batch;
        if (role == DimRole::seq) return options.seq;
        if (role == DimRole::context) return options.context ? options.context : options.seq;
        return std::nullopt;
      };
      // A sum of names and numbers ("past_sequence_length + 1", as exporters write a mask over
      // the cache and the new tokens) is the sum of their values.
      DimRole role = DimRole::unknown;
      std::optional<std::int64_t> value;
      if (param.find('+') != std::string::npos) {
        value = 0;
        for (const auto& term : split_sum(param)) {
          std::optional<std::int64_t> term_value;
          if (!term.empty() && term.size() <= 12 &&
              std::all_of(term.begin(), term.end(), [](unsigned char c) { return std::isdigit(c); })) {
            term_value = std::stoll(term);
          } else {
            role = dim_role(term, -1, false);
            term_value = value_of(role);
          }
          if (!term_value) {
            value.reset();
            break;
          }
          if (__builtin_add_overflow(*value, *term_value, &*value)) {
            throw InputError(fmt::format("{}: dimension {} ('{}') of input '{}' overflows", where, i, param,
                                         input.name()));
          }
        }
        if (value && *value <= 0) {
          throw InputError(fmt::format("{}: dimension {} ('{}') of input '{}' comes to {}, not a positive size",
                                       where, i, param, input.name(), *value));
        }
      } else {
        role = dim_role(param, i, integer_input);
        value = value_of(role);
        has_batch = has_batch || (role == DimRole::batch && batch.has_value());
      }
      if (!value) {
        const char* flag = role == DimRole::batch     ? " (--batch)"
                           : role == DimRole::seq     ? " (--seq)"
                           : role == DimRole::context ? " (--context or --seq)"
                                                      : "";
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
  return has_batch ? batch : std::nullopt;
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
    for (const auto& out : node.output()) {
      // Each tensor is written once (ONNX graphs are in single assignment form): a second writer
      // would make two ops of one tensor.
      if (!out.empty() && !defined.insert(out).second) {
        throw InputError(fmt::format("{}: node '{}' ({}) writes '{}', which is already defined", where,
                                     node.name().empty() ? std::to_string(i) : node.name(), node.op_type(), out));
      }
    }
  }
  for (const auto& out : graph.output()) {
    if (!defined.count(out.name())) {
      throw InputError(fmt::format("{}: graph output '{}' is not defined by any node", where, out.name()));
    }
  }
}

// The ops whose windows ONNX shape inference computes from kernel_shape, strides, dilations and
// pads: it divides by the strides and sizes outputs from the pads unchecked, so these are checked
// first.
const std::set<std::string>& window_ops() {
  static const std::set<std::string> ops = {"Conv",        "ConvTranspose", "ConvInteger", "QLinearConv",
                                            "DeformConv",  "MaxPool",       "AveragePool", "LpPool",
                                            "MaxUnpool",   "Col2Im"};
  return ops;
}

void check_tensor_dims(const onnx::TensorProto& tensor, const std::string& where, const std::string& owner) {
  for (const auto d : tensor.dims()) {
    if (d < 0) {
      throw InputError(fmt::format("{}: {} '{}' has a negative dimension ({})", where, owner, tensor.name(), d));
    }
  }
}

// Checks what ONNX shape inference takes on trust, in the graph and in the bodies of If/Loop/Scan
// nodes (inference reads those too): tensors stored in the file have no negative dimension, and a
// windowed op's kernel, strides and dilations are at least 1, its pads at least 0, its group at
// least 1. Each failure is one line naming the node and the attribute.
void check_attributes(const onnx::GraphProto& graph, const std::string& where) {
  for (const auto& init : graph.initializer()) check_tensor_dims(init, where, "initializer");
  for (const auto& init : graph.sparse_initializer()) {
    check_tensor_dims(init.values(), where, "sparse initializer");
    check_tensor_dims(init.indices(), where, "sparse initializer");
    for (const auto d : init.dims()) {
      if (d < 0) throw InputError(fmt::format("{}: a sparse initializer has a negative dimension ({})", where, d));
    }
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    const std::string name = node.name().empty() ? fmt::format("{}_{}", node.op_type(), i) : node.name();
    const bool windowed = domain_of(node.domain()).empty() && window_ops().count(node.op_type()) > 0;
    for (const auto& attr : node.attribute()) {
      if (attr.has_t()) check_tensor_dims(attr.t(), where, fmt::format("the value of node '{}'", name));
      for (const auto& t : attr.tensors()) check_tensor_dims(t, where, fmt::format("a value of node '{}'", name));
      if (attr.has_g()) check_attributes(attr.g(), where);
      for (const auto& g : attr.graphs()) check_attributes(g, where);
      if (!windowed) continue;
      const std::string& key = attr.name();
      const std::int64_t least = key == "pads" || key == "output_padding" ? 0 : 1;
      if (key != "kernel_shape" && key != "strides" && key != "dilations" && key != "pads" &&
          key != "output_padding" && key != "group")
        continue;
      std::vector<std::int64_t> values(attr.ints().begin(), attr.ints().end());
      if (attr.type() == onnx::AttributeProto::INT) values = {attr.i()};
      for (const auto v : values) {
        if (v < least) {
          throw InputError(fmt::format("{}: node '{}' ({}): {} {}: each must be {}", where, name, node.op_type(),
                                       key, fmt::join(values, ","), least == 0 ? "0 or more" : "1 or more"));
        }
      }
    }
  }
}

using Dims = std::vector<std::int64_t>;

// A value's element type and dimensions, when they are all known.
std::optional<std::pair<std::int32_t, Dims>> known_type(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  Dims dims;
  for (const auto& d : type.tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return std::pair{type.tensor_type().elem_type(), std::move(dims)};
}

void record_value(const onnx::ValueInfoProto& value, ParsedGraph& parsed) {
  if (!value.type().has_tensor_type()) return;
  if (is_float_type(value.type().tensor_type().elem_type())) parsed.float_tensors.insert(value.name());
  if (auto type = known_type(value.type())) parsed.shapes[value.name()] = std::move(type->second);
}

// Numpy-style broadcast of two shapes; nullopt when they do not broadcast.
std::optional<Dims> broadcast(const Dims& a, const Dims& b) {
  Dims out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const auto y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

// Output shapes that ONNX shape inference cannot give because this ONNX library has no schema for
// the node: a standard op newer than the library (Gelu, opset 20) or an op of a custom domain.
// An elementwise op writes its inputs' broadcast shape; any other such op is taken to write
// tensors shaped like its first floating-point activation (else its first input), and is counted
// in `guessed` (op type -> nodes) for a warning. The shapes go to `assumed`, which every inference
// pass starts from, so that the nodes after them get shapes too. Returns how many tensors got a
// shape.
int assume_shapes(const onnx::ModelProto& model, std::map<std::string, onnx::ValueInfoProto>& assumed,
                  std::map<std::string, int>& guessed, bool patient) {
  const auto& graph = model.graph();
  std::map<std::string, std::int64_t> opsets;
  for (const auto& opset : model.opset_import()) {
    opsets[domain_of(opset.domain())] = opset.version();
  }
  std::map<std::string, std::pair<std::int32_t, Dims>> known;
  const auto learn = [&](const onnx::ValueInfoProto& value) {
    if (auto type = known_type(value.type())) known[value.name()] = std::move(*type);
  };
  for (const auto& value : graph.input()) learn(value);
  for (const auto& value : graph.value_info()) learn(value);
  for (const auto& value : graph.output()) learn(value);
  std::map<std::string, std::int32_t> declared_types;
  for (const auto& value : graph.output()) {
    if (value.type().has_tensor_type() && value.type().tensor_type().elem_type() != 0)
      declared_types[value.name()] = value.type().tensor_type().elem_type();
  }
  std::set<std::string> parameters;
  for (const auto& init : graph.initializer()) {
    known[init.name()] = {init.data_type(), Dims(init.dims().begin(), init.dims().end())};
    parameters.insert(init.name());
  }
  const auto shaped = [&](const std::string& t) { return t.empty() || known.count(t) > 0; };
  int filled = 0;
  for (const auto& node : graph.node()) {
    const bool all_known = std::all_of(node.output().begin(), node.output().end(), shaped);
    const bool subgraph = std::any_of(node.attribute().begin(), node.attribute().end(), [](const auto& a) {
      return a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS;
    });
    if (all_known || subgraph || node.input_size() == 0) continue;
    const std::string domain = domain_of(node.domain());
    const auto opset = opsets.find(domain);
    const int version = opset == opsets.end() ? 1 : static_cast<int>(opset->second);
    if (onnx::OpSchemaRegistry::Schema(node.op_type(), version, domain) != nullptr) continue;
    const bool elementwise = domain.empty() && (is_unary_elementwise(node.op_type()) ||
                                                is_binary_elementwise(node.op_type()));
    // An elementwise op's first input; any other's first floating-point activation (an op that
    // also reads token ids writes activations, not ids), else its first input. `patient`: only
    // once every input has a shape (one computed at run time, NonZero's, never has).
    if (patient && !std::all_of(node.input().begin(), node.input().end(), shaped)) continue;
    auto first = known.find(node.input(0));
    if (!elementwise) {
      for (const auto& in : node.input()) {
        const auto it = known.find(in);
        if (it != known.end() && !parameters.count(in) && is_float_type(it->second.first)) {
          first = it;
          break;
        }
      }
    }
    if (first == known.end()) continue;
    auto [elem_type, dims] = first->second;
    if (elementwise) {
      bool ok = true;
      for (const auto& in : node.input()) {
        if (in.empty()) continue;
        const auto it = known.find(in);
        const auto both = it == known.end() ? std::nullopt : broadcast(dims, it->second.second);
        if (!both) {
          ok = false;
          break;
        }
        dims = *both;
      }
      if (!ok) continue;
    } else {
      ++guessed[domain.empty() ? node.op_type() : domain + "." + node.op_type()];
    }
    for (const auto& out : node.output()) {
      if (out.empty() || known.count(out)) continue;
      onnx::ValueInfoProto value;
      value.set_name(out);
      auto* tensor = value.mutable_type()->mutable_tensor_type();
      // A graph output keeps the element type the file declares for it.
      const auto declared = declared_types.find(out);
      tensor->set_elem_type(declared != declared_types.end() ? declared->second : elem_type);
      for (const auto d : dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
      assumed[out] = value;
      known[out] = {elem_type, dims};
      ++filled;
    }
  }
  return filled;
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
    if (is_float_type(init.data_type())) parsed.float_tensors.insert(init.name());
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
          if (is_float_type(attr.t().data_type())) parsed.float_tensors.insert(proto.output(0));
        }
      }
    }
    parsed.nodes.push_back(convert_node(proto, i));
  }
  return parsed;
}

}  // namespace truepeak::estimate::onnx_detail
