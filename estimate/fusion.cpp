#include "estimate/fusion.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/error.hpp"

namespace truepeak::estimate {
namespace {

enum class Role { pointwise, reduction, product, other };

Role role_of(const Op& op) {
  switch (op.kind) {
    case OpKind::elementwise:
      return Role::pointwise;
    case OpKind::norm:
    case OpKind::softmax:
      return Role::reduction;
    case OpKind::linear:
    case OpKind::matmul:
    case OpKind::conv2d:
      return Role::product;
    default:
      return Role::other;
  }
}

// Whether an elementwise op may join a kernel anchored by an op of `anchor`.
bool takes_epilogue(Role anchor, const FusionRules& rules) {
  switch (anchor) {
    case Role::pointwise:
      return rules.pointwise;
    case Role::reduction:
      return rules.into_reductions;
    case Role::product:
      return rules.into_products;
    case Role::other:
      return false;
  }
  return false;
}

// Tensors by the storage they name: a view's output is the tensor it views.
class Tensors {
 public:
  explicit Tensors(const Graph& g) {
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
      const Op& op = g.ops[i];
      if (op.kind == OpKind::reshape && !op.inputs.empty()) {
        root_[op.output.name] = root(op.inputs[0].name);
        continue;
      }
      std::set<std::string> read;
      for (const auto& in : op.inputs) read.insert(root(in.name));
      for (const auto& r : read) ++readers_[r];
      writer_[op.output.name] = i;
    }
  }
  std::string root(const std::string& name) const {
    const auto it = root_.find(name);
    return it == root_.end() ? name : it->second;
  }
  // Ops (views aside) that read the tensor or a view of it.
  int readers(const std::string& root) const {
    const auto it = readers_.find(root);
    return it == readers_.end() ? 0 : it->second;
  }
  std::optional<std::size_t> writer(const std::string& root) const {
    const auto it = writer_.find(root);
    return it == writer_.end() ? std::nullopt : std::optional(it->second);
  }

 private:
  std::map<std::string, std::string> root_;
  std::map<std::string, int> readers_;
  std::map<std::string, std::size_t> writer_;
};

}  // namespace

FusionCounts FusedGraph::counts() const {
  FusionCounts c;
  for (const auto& k : kernels) {
    if (k.ops.size() < 2) continue;
    ++c.kernels;
    c.ops += static_cast<int>(k.ops.size());
  }
  return c;
}

FusedGraph fuse(const Graph& g, const FusionRules& rules) {
  FusedGraph out;
  out.kernel_of.resize(g.ops.size());
  if (g.ops.empty()) return out;
  const Tensors tensors(g);
  const std::string graph_output = tensors.root(g.ops.back().output.name);
  // The tensor each kernel's last op wrote: the only one of its tensors that another op may read.
  std::vector<std::string> kernel_output;
  // The kernel whose output `root` is, where an op may take it in: `root` has one reader and is
  // not the graph's output.
  const auto open_kernel = [&](const std::string& root) -> std::optional<std::size_t> {
    if (root == graph_output || tensors.readers(root) != 1) return std::nullopt;
    const auto writer = tensors.writer(root);
    if (!writer) return std::nullopt;  // a graph input
    const std::size_t k = out.kernel_of[*writer];
    if (kernel_output[k] != root) return std::nullopt;
    return k;
  };
  const auto join = [&](std::size_t k, std::size_t i) {
    out.kernels[k].ops.push_back(i);
    out.kernel_of[i] = k;
    kernel_output[k] = tensors.root(g.ops[i].output.name);
  };
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    const Role role = role_of(op);
    std::optional<std::size_t> into;
    if (role == Role::pointwise) {
      for (const auto& in : op.inputs) {
        const auto k = open_kernel(tensors.root(in.name));
        if (k && takes_epilogue(role_of(g.ops[out.kernels[*k].anchor]), rules)) {
          into = k;
          break;
        }
      }
    } else if (role == Role::reduction && rules.into_reductions && !op.inputs.empty()) {
      // A prologue: an elementwise kernel whose output only this norm or softmax reads.
      const auto k = open_kernel(tensors.root(op.inputs.front().name));
      if (k && role_of(g.ops[out.kernels[*k].anchor]) == Role::pointwise) {
        into = k;
        out.kernels[*k].anchor = i;
      }
    }
    if (into) {
      join(*into, i);
      continue;
    }
    out.kernels.push_back({{}, i});
    kernel_output.emplace_back();
    join(out.kernels.size() - 1, i);
  }
  return out;
}

Work fused_work(const Graph& g, const FusedKernel& k, const std::vector<Work>& works,
                double kernel_s, const Bindings& b, double e) {
  if (works.size() != k.ops.size() || k.ops.empty())
    throw Error(fmt::format("internal error: a fused kernel of {} ops has {} works", k.ops.size(),
                            works.size()));
  const auto anchor_at = static_cast<std::size_t>(
      std::find(k.ops.begin(), k.ops.end(), k.anchor) - k.ops.begin());
  Work w = works.at(anchor_at);
  w.kernel_s = kernel_s;
  w.vector_op.clear();
  w.own_elements_per_s.reset();
  w.own_flops_per_s.reset();
  // The kernel's output is costed as written apart from its inputs: which buffer a generated
  // kernel writes is the runtime's choice, not the graph's.
  w.in_place_bytes = 0;
  w.within_op = false;
  w.flops = 0;
  w.elements = 0;
  w.input_bytes = 0;
  for (const auto& member : works) {
    w.flops += member.flops;
    w.elements += member.elements;
    w.input_bytes += member.input_bytes;
  }
  // The tensors the kernel's ops write; a view of one is the same storage.
  std::map<std::string, std::string> root;
  std::set<std::string> written;
  for (std::size_t i = k.ops.front(); i <= k.ops.back(); ++i) {
    const Op& op = g.ops[i];
    if (op.kind == OpKind::reshape && !op.inputs.empty()) {
      const auto it = root.find(op.inputs[0].name);
      root[op.output.name] = it == root.end() ? op.inputs[0].name : it->second;
    }
  }
  const auto root_of = [&](const std::string& name) {
    const auto it = root.find(name);
    return it == root.end() ? name : it->second;
  };
  for (const auto i : k.ops) written.insert(g.ops[i].output.name);
  std::set<std::string> read, params;
  double activations = 0, weights = 0;
  for (const auto i : k.ops) {
    const Op& op = g.ops[i];
    for (const auto& in : op.inputs)
      if (!written.count(root_of(in.name)) && read.insert(in.name).second)
        activations += static_cast<double>(num_elements(in.shape, b));
    for (const auto& p : op.weights)
      if (params.insert(p.name).second) weights += static_cast<double>(num_elements(p.shape, b));
  }
  const double output = static_cast<double>(num_elements(g.ops[k.ops.back()].output.shape, b));
  w.weight_bytes = weights * e;
  w.bytes = (activations + weights + output) * e;
  // A product writes a fresh buffer, its epilogue's result in its place; any other kernel writes
  // where an input just left, as its ops alone do.
  w.output_bytes = w.output_bytes > 0 ? output * e : 0;
  w.input_bytes = std::min(w.input_bytes, w.bytes - w.weight_bytes);
  return w;
}

}  // namespace truepeak::estimate
