#include "estimate/memory.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "estimate/cost.hpp"

namespace truepeak::estimate {
namespace {

bool is_view(const Op& op) { return op.kind == OpKind::reshape; }

// Views share the storage of their source: map every tensor name to the name that owns storage.
std::map<std::string, std::string> storage_roots(const Graph& graph) {
  std::map<std::string, std::string> root;
  for (const auto& t : graph.inputs) root[t.name] = t.name;
  for (const auto& op : graph.ops) {
    if (is_view(op) && !op.inputs.empty()) {
      auto it = root.find(op.inputs[0].name);
      root[op.output.name] = it == root.end() ? op.inputs[0].name : it->second;
    } else {
      root[op.output.name] = op.output.name;
    }
  }
  return root;
}

const std::string& root_of(const std::map<std::string, std::string>& roots,
                           const std::string& name) {
  auto it = roots.find(name);
  return it == roots.end() ? name : it->second;
}

bool saves_input(const Op& op) {
  switch (op.kind) {
    case OpKind::linear:
    case OpKind::matmul:
    case OpKind::conv2d:
    case OpKind::attention:
    case OpKind::norm:
    case OpKind::embedding:
      return true;
    case OpKind::pool:
      return is_max_pool(op);
    case OpKind::elementwise:
      return op.fn != "add" && op.fn != "scale" && op.fn != "rope" && op.fn != "dropout";
    default:
      return false;
  }
}

bool saves_output(const Op& op) {
  return op.kind == OpKind::softmax || op.kind == OpKind::attention;
}

}  // namespace

double peak_live_bytes(const Graph& graph, const Bindings& b, double e) {
  // Storage slots by index (names are looked up once): views share their source's slot.
  std::unordered_map<std::string_view, std::size_t> slot;
  std::vector<double> size;
  const std::size_t end = graph.ops.size();
  std::vector<std::size_t> last;  // last op reading each slot; `end` when none does
  auto new_slot = [&](std::string_view name, double elements) {
    slot[name] = size.size();
    size.push_back(elements);
    last.push_back(end);
    return size.size() - 1;
  };
  for (const auto& t : graph.inputs)
    new_slot(t.name, static_cast<double>(num_elements(t.shape, b)));
  std::vector<std::ptrdiff_t> written(end, -1);  // slot each op allocates (-1 for views)
  std::vector<bool> read(size.size(), false);
  for (std::size_t i = 0; i < end; ++i) {
    const Op& op = graph.ops[i];
    for (const auto& t : op.inputs) {
      auto it = slot.find(t.name);
      const std::size_t k = it != slot.end() ? it->second : new_slot(t.name, 0);
      if (read.size() < size.size()) read.resize(size.size(), false);
      last[k] = read[k] ? std::max(last[k], i) : i;
      read[k] = true;
    }
    if (is_view(op) && !op.inputs.empty()) {
      slot[op.output.name] = slot[op.inputs[0].name];
    } else {
      written[i] = static_cast<std::ptrdiff_t>(
          new_slot(op.output.name, static_cast<double>(num_elements(op.output.shape, b))));
      read.resize(size.size(), false);
    }
  }
  std::vector<std::vector<std::size_t>> frees(end + 1);
  for (std::size_t k = 0; k < size.size(); ++k) frees[last[k]].push_back(k);
  double live = 0;
  for (const auto& t : graph.inputs) live += size[slot[t.name]];
  double peak = live;
  for (std::size_t i = 0; i < end; ++i) {
    if (written[i] >= 0) live += size[static_cast<std::size_t>(written[i])];
    peak = std::max(peak, live);
    for (const auto k : frees[i]) live -= size[k];
  }
  return peak * e;
}

std::set<std::string> tensors_needing_grad(const Graph& graph) {
  std::set<std::string> need;
  for (const auto& op : graph.ops) {
    bool any = !op.weights.empty();
    for (const auto& t : op.inputs) any = any || need.count(t.name);
    if (any) need.insert(op.output.name);
  }
  return need;
}

double training_activation_bytes(const Graph& graph, const Bindings& b, double e) {
  const auto roots = storage_roots(graph);
  std::map<std::string, double> saved;
  double transient = 0;
  for (const auto& op : graph.ops) {
    if (saves_input(op))
      for (const auto& t : op.inputs) {
        // Storage size: the source tensor's (a view of part of it keeps all of it alive).
        saved.emplace(root_of(roots, t.name), static_cast<double>(num_elements(t.shape, b)));
      }
    if (saves_output(op))
      saved.emplace(op.output.name, static_cast<double>(num_elements(op.output.shape, b)));
    double g = static_cast<double>(num_elements(op.output.shape, b));
    for (const auto& t : op.inputs) g += static_cast<double>(num_elements(t.shape, b));
    transient = std::max(transient, g);
  }
  double total = 0;
  for (const auto& [name, n] : saved) total += n;
  return (total + transient) * e;
}

double state_bytes(const Graph& graph, const Bindings& b, double e) {
  std::map<std::string, double> seen;
  for (const auto& op : graph.ops)
    for (const auto& t : op.state)
      seen.emplace(t.name, static_cast<double>(num_elements(t.shape, b)));
  double total = 0;
  for (const auto& [name, n] : seen) total += n;
  return total * e;
}

Bindings bindings_for(const Model& model, const Options& options) {
  Bindings b;
  std::optional<std::int64_t> s = options.seq;
  for (const auto& [name, value] : model.defaults) {
    if (name == "S") {
      if (!s) s = value;
      continue;
    }
    if (name == "N" || name == "T") continue;
    b.emplace_back(name, value);
  }
  b.emplace_back("N", options.batch);
  if (s) b.emplace_back("S", *s);
  b.emplace_back("T", options.context.value_or(s.value_or(1)));
  return b;
}

}  // namespace truepeak::estimate
