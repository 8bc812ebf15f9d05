// The rewrites an inference runtime applies before ONNX nodes become ops (see onnx_map.cpp).
// Constant subgraphs folded, BatchNormalization into Conv, bias Adds into GEMMs, transposes into
// MatMul operands, and elementwise regions rebuilt into the framework op an exporter decomposed.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "estimate/onnx_map_detail.hpp"

namespace truepeak::estimate::onnx_detail::mapping {
namespace {

// Ops whose output depends only on input shapes (known at load time) or nothing at all.
const std::set<std::string>& shape_only_ops() {
  static const std::set<std::string> ops = {"Shape", "Size", "Constant", "EyeLike", "RandomNormal",
                                            "RandomUniform", "RandomNormalLike", "RandomUniformLike"};
  return ops;
}

}  // namespace

void Mapper::fold_constants() {
  constants_ = g_.initializers;
  for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
    const auto& node = g_.nodes[i];
    if (node.has_subgraph) continue;
    bool constant = shape_only_ops().count(node.op_type) > 0;
    if (!constant) {
      constant = std::all_of(node.inputs.begin(), node.inputs.end(),
                             [&](const std::string& t) { return is_constant(t); }) &&
                 !node.inputs.empty();
    }
    if (constant) {
      for (const auto& out : node.outputs) constants_.insert(out);
      done_[i] = true;
      ++folded_;
    }
  }
}

void Mapper::fuse_batchnorm_into_conv() {
  for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
    const auto& node = g_.nodes[i];
    if (done_[i] || node.op_type != "Conv" || node.outputs.size() != 1) continue;
    const int next = single_consumer(node.outputs[0]);
    if (next < 0 || done_[next] || g_.nodes[next].op_type != "BatchNormalization") continue;
    const auto& bn = g_.nodes[next];
    if (!std::all_of(bn.inputs.begin() + 1, bn.inputs.end(), [&](const auto& t) { return is_constant(t); }))
      continue;
    output_alias_[i] = bn.outputs[0];
    done_[next] = true;
    count_fusion("batchnorm folded into conv");
  }
}

void Mapper::fuse_bias_into_gemm() {
  for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
    const auto& node = g_.nodes[i];
    if (done_[i] || (node.op_type != "MatMul" && node.op_type != "Gemm" && node.op_type != "Conv")) continue;
    if (node.op_type == "Gemm" && node.inputs.size() > 2 && !node.inputs[2].empty()) continue;
    if (node.op_type == "Conv" && node.inputs.size() > 2 && !node.inputs[2].empty()) continue;
    const std::string out = output_of(static_cast<int>(i));
    if (!has_shape(out)) continue;
    const int next = single_consumer(out);
    if (next < 0 || done_[next] || g_.nodes[next].op_type != "Add" || g_.nodes[next].inputs.size() != 2) continue;
    const auto& add = g_.nodes[next];
    const std::string& bias = add.inputs[0] == out ? add.inputs[1] : add.inputs[0];
    if (!is_constant(bias) || !has_shape(bias)) continue;
    // A bias broadcasts along the output feature axis only.
    const auto& out_dims = g_.shapes.at(out);
    const auto& bias_dims = g_.shapes.at(bias);
    const std::int64_t features = node.op_type == "Conv" ? (out_dims.size() > 1 ? out_dims[1] : 0)
                                                          : (out_dims.empty() ? 0 : out_dims.back());
    if (numel(bias_dims) != features) continue;
    bias_[i] = bias;
    output_alias_[i] = add.outputs[0];
    done_[next] = true;
    count_fusion(node.op_type == "Conv" ? "bias add into conv" : "bias add into linear/matmul");
  }
}

void Mapper::fold_transposes_into_matmul() {
  for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
    const auto& node = g_.nodes[i];
    if (done_[i] || node.op_type != "Transpose" || node.outputs.size() != 1) continue;
    const auto perm = node.ints_attr("perm");
    const auto n = static_cast<std::int64_t>(perm.size());
    if (n < 2) continue;
    bool swaps_last_two = perm[n - 1] == n - 2 && perm[n - 2] == n - 1;
    for (std::int64_t a = 0; a + 2 < n && swaps_last_two; ++a) swaps_last_two = perm[a] == a;
    if (!swaps_last_two) continue;
    const auto it = consumers_.find(node.outputs[0]);
    if (it == consumers_.end()) continue;
    const bool only_matmul = std::all_of(it->second.begin(), it->second.end(), [&](int c) {
      return c >= 0 && !done_[c] && g_.nodes[c].op_type == "MatMul";
    });
    if (!only_matmul) continue;
    transposed_source_[node.outputs[0]] = node.inputs[0];
    done_[i] = true;
    count_fusion("transpose folded into matmul operand");
  }
}

bool Mapper::is_region_op(const Node& node) const {
  return unary_ops().count(node.op_type) || binary_ops().count(node.op_type) ||
         (reduce_ops().count(node.op_type) && node.op_type.rfind("Arg", 0) != 0);
}

std::optional<Mapper::RegionKind> Mapper::classify(const std::multiset<std::string>& ops) {
  auto has = [&](const char* op) { return ops.count(op) > 0; };
  if (ops.size() < 2) return std::nullopt;
  if (has("Erf") && ops.size() <= 6) return RegionKind{OpKind::elementwise, "gelu"};
  // GELU's tanh approximation (GPT-2's): a function of its own in the libraries, timed apart.
  if (has("Tanh") && has("Pow") && ops.size() <= 9) return RegionKind{OpKind::elementwise, "gelu_tanh"};
  if (has("Tanh") && ops.count("Mul") >= 3 && ops.size() <= 9) {
    return RegionKind{OpKind::elementwise, "gelu_tanh"};
  }
  if (has("ReduceMean") && has("Sqrt") && ops.size() <= 11) {
    return RegionKind{OpKind::norm, has("Sub") ? "layernorm" : "rmsnorm"};
  }
  if (has("Exp") && has("ReduceSum") && ops.size() <= 6) return RegionKind{OpKind::softmax, ""};
  if (ops.size() == 2 && has("Sigmoid") && has("Mul")) return RegionKind{OpKind::elementwise, "silu"};
  if (ops.size() == 2 && has("HardSigmoid") && has("Mul")) return RegionKind{OpKind::elementwise, "hardswish"};
  if (ops.size() == 4 && has("Clip") && has("Mul") && has("Div") && has("Add")) {
    return RegionKind{OpKind::elementwise, "hardswish"};
  }
  if (ops.size() == 3 && has("Softplus") && has("Tanh") && has("Mul")) {
    return RegionKind{OpKind::elementwise, "mish"};
  }
  return std::nullopt;
}

void Mapper::find_framework_regions() {
  // source[i]: the one non-constant tensor node i depends on through region nodes, if any.
  std::map<int, std::string> source;
  for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
    const auto& node = g_.nodes[i];
    if (done_[i] || !is_region_op(node)) continue;
    std::set<std::string> sources;
    for (const auto& t : node.inputs) {
      if (is_constant(t)) continue;
      const auto p = producer_.find(t);
      if (p != producer_.end() && source.count(p->second)) {
        sources.insert(source.at(p->second));
      } else {
        sources.insert(t);
      }
    }
    if (sources.size() == 1) source[static_cast<int>(i)] = *sources.begin();
  }
  std::map<std::string, std::vector<int>> regions;
  for (const auto& [node, src] : source) regions[src].push_back(node);
  for (auto& [src, members] : regions) {
    if (members.size() < 2) continue;
    const std::set<int> inside(members.begin(), members.end());
    std::vector<std::string> escaping;
    std::multiset<std::string> ops;
    for (int m : members) {
      ops.insert(g_.nodes[m].op_type);
      for (const auto& out : g_.nodes[m].outputs) {
        const auto it = consumers_.find(out);
        if (it == consumers_.end()) continue;
        if (std::any_of(it->second.begin(), it->second.end(), [&](int c) { return !inside.count(c); })) {
          escaping.push_back(out);
        }
      }
    }
    const auto kind = classify(ops);
    if (escaping.size() != 1 || !kind) continue;
    Region region{kind->kind, kind->fn, src, escaping.front(), {}};
    for (int m : members) {
      for (const auto& t : g_.nodes[m].inputs) {
        if (is_parameter(t) && std::find(region.weights.begin(), region.weights.end(), t) == region.weights.end())
          region.weights.push_back(t);
      }
    }
    // The fused op is emitted where its result is produced: after everything it reads.
    const int last = producer_.at(region.output);
    for (int m : members) {
      done_[m] = true;
      representative_[m] = last;
    }
    done_[last] = false;
    regions_[last] = std::move(region);
    count_fusion(fmt::format("{} rebuilt from {} nodes", kind->fn.empty() ? "softmax" : kind->fn, members.size()));
    ++region_count_;
  }
}

std::string Mapper::output_of(int node) const {
  const auto alias = output_alias_.find(node);
  return alias != output_alias_.end() ? alias->second : g_.nodes[node].outputs.at(0);
}

}  // namespace truepeak::estimate::onnx_detail::mapping
