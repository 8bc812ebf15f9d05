// Output shapes for ONNX nodes that this ONNX library has no schema for, so no shape inference:
// an elementwise op's broadcast shape, any other op's first floating-point activation's.
#include <onnx/defs/schema.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "estimate/onnx_graph.hpp"
#include "estimate/onnx_parse_detail.hpp"
#include "estimate/onnx_shape_eval.hpp"

namespace truepeak::estimate::onnx_detail::parse {
namespace {

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

}  // namespace

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
        if (it != known.end() && !parameters.count(in) && is_real_type(it->second.first)) {
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

}  // namespace truepeak::estimate::onnx_detail::parse
