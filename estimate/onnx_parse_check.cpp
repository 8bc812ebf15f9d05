// Checks of an ONNX graph before shape inference: every tensor defined before it is read and
// written once, and what inference takes on trust (dimensions, windows' attributes) in range.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "estimate/onnx_parse_detail.hpp"

namespace truepeak::estimate::onnx_detail::parse {

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

namespace {

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

}  // namespace

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

void fill_kernel_shapes(onnx::GraphProto& graph) {
  // The input that holds each convolution's weight.
  static const std::map<std::string, int> weight_input = {
      {"Conv", 1}, {"ConvTranspose", 1}, {"ConvInteger", 1}, {"DeformConv", 1}, {"QLinearConv", 3}};
  // Ops whose output has their first input's shape: a quantized model's weight reaches its
  // convolution through them (DequantizeLinear of an int8 initializer).
  static const std::set<std::string> same_shape = {"DequantizeLinear", "QuantizeLinear", "Identity", "Cast"};
  // The shapes known before inference: the initializers' and those the graph's value_info gives
  // in full (the shapes assumed for the outputs of ops without a schema).
  std::map<std::string, std::vector<std::int64_t>> known;
  for (const auto& init : graph.initializer())
    known[init.name()] = std::vector<std::int64_t>(init.dims().begin(), init.dims().end());
  for (const auto& info : graph.value_info()) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) continue;
    std::vector<std::int64_t> dims;
    for (const auto& d : info.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) break;
      dims.push_back(d.dim_value());
    }
    if (static_cast<int>(dims.size()) == info.type().tensor_type().shape().dim_size())
      known.emplace(info.name(), std::move(dims));
  }
  for (const auto& node : graph.node()) {
    if (domain_of(node.domain()).empty() && node.op_type() == "Constant" && node.output_size() > 0) {
      for (const auto& attr : node.attribute())
        if (attr.name() == "value" && attr.has_t())
          known.emplace(node.output(0), std::vector<std::int64_t>(attr.t().dims().begin(), attr.t().dims().end()));
    }
    if (domain_of(node.domain()).empty() && same_shape.count(node.op_type()) && node.input_size() > 0 &&
        node.output_size() > 0) {
      const auto source = known.find(node.input(0));
      if (source != known.end()) known.emplace(node.output(0), source->second);
    }
  }
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) fill_kernel_shapes(*attr.mutable_g());
      for (auto& g : *attr.mutable_graphs()) fill_kernel_shapes(g);
    }
    const auto op = weight_input.find(node.op_type());
    if (!domain_of(node.domain()).empty() || op == weight_input.end() || node.input_size() <= op->second) continue;
    const bool has_kernel = std::any_of(node.attribute().begin(), node.attribute().end(),
                                        [](const auto& a) { return a.name() == "kernel_shape"; });
    const auto weight = known.find(node.input(op->second));
    if (has_kernel || weight == known.end()) continue;
    auto* kernel = node.add_attribute();
    kernel->set_name("kernel_shape");
    kernel->set_type(onnx::AttributeProto::INTS);
    for (std::size_t i = 2; i < weight->second.size(); ++i) kernel->add_ints(weight->second[i]);
  }
}

}  // namespace truepeak::estimate::onnx_detail::parse
