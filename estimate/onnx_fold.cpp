// Shape code folded at load time. Exporters compute reshape targets and resize sizes inside the
// graph (Shape -> Gather -> arithmetic -> Concat -> Reshape; Cast to float, Div, Floor, Cast back
// for a resize by a scale; Where/Equal for -1 handling); ONNX shape inference follows only part of
// that, so once the inputs are bound these small tensors are evaluated here and handed to shape
// inference as initializers. Scripted code adds If and Loop nodes whose condition or trip count is
// shape code: once known, the branch taken replaces the If and the Loop is unrolled. Every runtime
// does the same (constant folding); nothing here costs time at inference.
#include "estimate/onnx_fold.hpp"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "estimate/onnx_shape_eval.hpp"

namespace truepeak::estimate::onnx_detail {
namespace {

// A Loop is unrolled when its copies add at most this many nodes, and the graph stays under
// kMaxGraphNodes: enough for scripted loops over the detections of an image, and a bound on what
// a file built to grow the graph can make of it.
constexpr std::int64_t kMaxUnrolledNodes = 50000;
constexpr int kMaxGraphNodes = 200000;

// Inputs whose values ONNX shape inference reads to size a node's output, for the ops whose
// floating-point inputs matter: a float value computed in the graph is handed over only there (an
// integer one everywhere, as shape code is integer).
bool shape_reads_real_input(const std::string& op_type, int input) {
  if (op_type == "Resize") return input >= 1;
  if (op_type == "Upsample") return input == 1;
  if (op_type == "Range") return true;
  return false;
}

const onnx::GraphProto* graph_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.has_g()) return &a.g();
  }
  return nullptr;
}

// Renames, in a nested graph, the references to names an inlined graph defined.
void rename_references(onnx::GraphProto& graph, const std::map<std::string, std::string>& names) {
  for (auto& node : *graph.mutable_node()) {
    for (auto& input : *node.mutable_input()) {
      if (const auto it = names.find(input); it != names.end()) input = it->second;
    }
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) rename_references(*attr.mutable_g(), names);
      for (auto& g : *attr.mutable_graphs()) rename_references(g, names);
    }
  }
  std::set<std::string> local;
  for (const auto& node : graph.node()) local.insert(node.output().begin(), node.output().end());
  for (const auto& init : graph.initializer()) local.insert(init.name());
  for (auto& out : *graph.mutable_output()) {
    if (local.count(out.name())) continue;
    if (const auto it = names.find(out.name()); it != names.end()) out.set_name(it->second);
  }
}

class Folder {
 public:
  explicit Folder(onnx::ModelProto& model) : graph_(*model.mutable_graph()) {
    for (const auto& opset : model.opset_import()) {
      if (opset.domain().empty() || opset.domain() == "ai.onnx") opset_ = opset.version();
    }
    for (const auto& init : graph_.initializer()) {
      initializer_names_.insert(init.name());
      if (auto v = known_from_proto(init)) known_[init.name()] = std::move(*v);
      shapes_[init.name()] = {init.dims().begin(), init.dims().end()};
    }
    auto record = [&](const onnx::ValueInfoProto& v) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
      std::vector<std::int64_t> dims;
      for (const auto& d : v.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() < 0) return;
        dims.push_back(d.dim_value());
      }
      shapes_[v.name()] = dims;
    };
    for (const auto& v : graph_.input()) record(v);
    for (const auto& v : graph_.value_info()) record(v);
    for (const auto& v : graph_.output()) record(v);
    for (const auto& v : graph_.input()) taken_.insert(v.name());
    for (const auto& node : graph_.node())
      taken_.insert(node.output().begin(), node.output().end());
  }

  int run() {
    std::map<int, std::vector<onnx::NodeProto>> replacements;
    for (int i = 0; i < graph_.node_size(); ++i) {
      const auto& node = graph_.node(i);
      if (node.op_type() == "If" || node.op_type() == "Loop") {
        if (node.domain().empty() || node.domain() == "ai.onnx") {
          if (auto nodes = node.op_type() == "If" ? inline_if(node) : unroll_loop(node))
            replacements[i] = std::move(*nodes);
        }
        continue;
      }
      const bool all_known =
          std::all_of(node.output().begin(), node.output().end(),
                      [&](const std::string& out) { return out.empty() || known_.count(out) > 0; });
      if (all_known || node.output_size() == 0) continue;
      std::vector<const Known*> values;
      std::vector<const std::vector<std::int64_t>*> shapes;
      for (const auto& in : node.input()) {
        const auto v = in.empty() ? known_.end() : known_.find(in);
        values.push_back(v == known_.end() ? nullptr : &v->second);
        const auto s = in.empty() ? shapes_.end() : shapes_.find(in);
        shapes.push_back(s == shapes_.end() ? nullptr : &s->second);
      }
      auto outputs = evaluate_node(node, values, shapes);
      if (!outputs || static_cast<int>(outputs->size()) != node.output_size()) continue;
      for (int k = 0; k < node.output_size(); ++k) {
        if (!node.output(k).empty())
          known_[node.output(k)] = std::move((*outputs)[static_cast<std::size_t>(k)]);
      }
    }
    // Hand every evaluated tensor that a node reads to shape inference as an initializer.
    int changed = 0;
    std::map<std::string, std::string> renamed;
    for (auto& node : *graph_.mutable_node()) {
      for (int k = 0; k < node.input_size(); ++k) {
        const std::string& input = node.input(k);
        if (input.empty() || initializer_names_.count(input)) continue;
        const auto value = known_.find(input);
        if (value == known_.end()) continue;
        if (value->second.is_real() && !shape_reads_real_input(node.op_type(), k)) continue;
        auto it = renamed.find(input);
        if (it == renamed.end()) {
          const std::string name = input + "__folded";
          *graph_.add_initializer() = known_to_proto(value->second, name);
          initializer_names_.insert(name);
          it = renamed.emplace(input, name).first;
          ++changed;
        }
        node.set_input(k, it->second);
      }
    }
    if (!replacements.empty()) {
      google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
      for (int i = 0; i < graph_.node_size(); ++i) {
        const auto it = replacements.find(i);
        if (it == replacements.end()) {
          *nodes.Add() = graph_.node(i);
          continue;
        }
        for (auto& n : it->second) *nodes.Add() = std::move(n);
        ++changed;
      }
      graph_.mutable_node()->Swap(&nodes);
    }
    return changed;
  }

 private:
  const Known* value_of(const std::string& name) const {
    const auto it = known_.find(name);
    return name.empty() || it == known_.end() ? nullptr : &it->second;
  }

  // A name no tensor of the graph has.
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; taken_.count(name) || known_.count(name) || initializer_names_.count(name); ++k)
      name = fmt::format("{}_{}", base, k);
    taken_.insert(name);
    return name;
  }

  std::string add_initializer(const Known& value, const std::string& base) {
    const std::string name = fresh(base);
    *graph_.add_initializer() = known_to_proto(value, name);
    initializer_names_.insert(name);
    return name;
  }

  // Copies `body`'s nodes into `out` with every name it defines prefixed (`names` holds the
  // bindings of its inputs and receives the rest); its initializers become the graph's.
  void copy_body(const onnx::GraphProto& body, const std::string& tensor_prefix,
                 const std::string& node_prefix, std::map<std::string, std::string>& names,
                 std::vector<onnx::NodeProto>& out) {
    for (const auto& init : body.initializer()) {
      onnx::TensorProto copy = init;
      copy.set_name(fresh(tensor_prefix + init.name()));
      names[init.name()] = copy.name();
      initializer_names_.insert(copy.name());
      *graph_.add_initializer() = std::move(copy);
    }
    for (const auto& node : body.node()) {
      for (const auto& o : node.output()) {
        if (!o.empty()) names[o] = fresh(tensor_prefix + o);
      }
    }
    for (int i = 0; i < body.node_size(); ++i) {
      onnx::NodeProto node = body.node(i);
      node.set_name(node_prefix +
                    (node.name().empty() ? fmt::format("{}_{}", node.op_type(), i) : node.name()));
      for (auto& input : *node.mutable_input()) {
        if (const auto it = names.find(input); it != names.end()) input = it->second;
      }
      for (auto& output : *node.mutable_output()) {
        if (const auto it = names.find(output); it != names.end()) output = it->second;
      }
      for (auto& attr : *node.mutable_attribute()) {
        if (attr.has_g()) rename_references(*attr.mutable_g(), names);
        for (auto& g : *attr.mutable_graphs()) rename_references(g, names);
      }
      out.push_back(std::move(node));
    }
  }

  static onnx::NodeProto identity(const std::string& from, const std::string& to,
                                  const std::string& name) {
    onnx::NodeProto node;
    node.set_op_type("Identity");
    node.set_name(name);
    node.add_input(from);
    node.add_output(to);
    return node;
  }

  static std::string node_label(const onnx::NodeProto& node) {
    return node.name().empty() ? node.op_type() + "(" + node.output(0) + ")" : node.name();
  }
  // The prefix of the tensors an inlined copy defines.
  static std::string tensor_base(const onnx::NodeProto& node) {
    return node.output(0).empty() ? node_label(node) : node.output(0);
  }

  std::optional<std::vector<onnx::NodeProto>> inline_if(const onnx::NodeProto& node) {
    if (node.input_size() < 1 || node.output_size() < 1) return std::nullopt;
    const Known* cond = value_of(node.input(0));
    if (!cond || cond->size() != 1) return std::nullopt;
    const bool taken = cond->real(0) != 0;
    const auto* branch = graph_attr(node, taken ? "then_branch" : "else_branch");
    if (!branch || branch->output_size() != node.output_size()) return std::nullopt;
    if (graph_.node_size() + branch->node_size() > kMaxGraphNodes) return std::nullopt;
    const char* which = taken ? "then" : "else";
    std::map<std::string, std::string> names;
    std::vector<onnx::NodeProto> out;
    copy_body(*branch, fmt::format("{}/{}/", tensor_base(node), which),
              fmt::format("{}/{}/", node_label(node), which), names, out);
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty()) continue;
      const auto& result = branch->output(k).name();
      const auto it = names.find(result);
      out.push_back(identity(it == names.end() ? result : it->second, node.output(k),
                             fmt::format("{}/{}/output_{}", node_label(node), which, k)));
    }
    return out;
  }

  // Whether a loop body's condition output is true whenever its condition input is: the input
  // itself, a constant true, or an Identity of either.
  bool condition_stays_true(const onnx::GraphProto& body) const {
    const std::string& cond_in = body.input(1).name();
    std::string cond = body.output(0).name();
    for (int depth = 0; depth < 8; ++depth) {
      if (cond == cond_in) return true;
      if (const Known* outer = value_of(cond)) return outer->size() == 1 && outer->real(0) != 0;
      const auto producer =
          std::find_if(body.node().begin(), body.node().end(), [&](const onnx::NodeProto& n) {
            return std::find(n.output().begin(), n.output().end(), cond) != n.output().end();
          });
      if (producer == body.node().end()) {
        for (const auto& init : body.initializer()) {
          if (init.name() != cond) continue;
          const auto v = known_from_proto(init);
          return v && v->size() == 1 && v->real(0) != 0;
        }
        return false;
      }
      if (producer->op_type() == "Identity" && producer->input_size() == 1) {
        cond = producer->input(0);
        continue;
      }
      if (producer->op_type() == "Constant") {
        const auto v = evaluate_node(*producer, {}, {});
        return v && v->size() == 1 && v->front().size() == 1 && v->front().real(0) != 0;
      }
      return false;
    }
    return false;
  }

  std::optional<std::vector<onnx::NodeProto>> unroll_loop(const onnx::NodeProto& node) {
    const auto* body = graph_attr(node, "body");
    if (!body || node.input_size() < 2 || body->input_size() < 2 || body->output_size() < 1 ||
        node.output_size() < 1)
      return std::nullopt;
    const int carried = node.input_size() - 2;
    const int scans = body->output_size() - 1 - carried;
    if (body->input_size() != 2 + carried || scans < 0 || node.output_size() > carried + scans)
      return std::nullopt;
    // The trip count must be known; a loop without one runs while its condition holds (on data).
    const Known* trips = value_of(node.input(0));
    if (!trips || trips->size() != 1 || trips->is_real()) return std::nullopt;
    std::int64_t count = trips->ints[0];
    if (!node.input(1).empty()) {
      const Known* cond = value_of(node.input(1));
      if (!cond || cond->size() != 1) return std::nullopt;
      if (cond->real(0) == 0) count = 0;
    }
    if (count < 0) count = 0;
    if (count > 0 && !condition_stays_true(*body)) return std::nullopt;
    if (count == 0 && scans > 0)
      return std::nullopt;  // empty scan outputs: nothing to size them by
    if (count > 0 && (body->node_size() + 2) * count > kMaxUnrolledNodes) return std::nullopt;
    if (graph_.node_size() + (body->node_size() + 2) * count > kMaxGraphNodes) return std::nullopt;

    std::vector<onnx::NodeProto> out;
    std::vector<std::string> state(node.input().begin() + 2, node.input().end());
    std::vector<std::vector<std::string>> scanned(static_cast<std::size_t>(scans));
    Known truth;
    truth.type = onnx::TensorProto::BOOL;
    truth.ints = {1};
    const std::string label = node_label(node);
    const std::string cond_true =
        count > 0 ? add_initializer(truth, tensor_base(node) + "/cond") : std::string();
    for (std::int64_t i = 0; i < count; ++i) {
      Known iteration;
      iteration.ints = {i};
      std::map<std::string, std::string> names;
      names[body->input(0).name()] =
          add_initializer(iteration, fmt::format("{}/iter{}/i", tensor_base(node), i));
      names[body->input(1).name()] = cond_true;
      for (int k = 0; k < carried; ++k)
        names[body->input(2 + k).name()] = state[static_cast<std::size_t>(k)];
      copy_body(*body, fmt::format("{}/iter{}/", tensor_base(node), i),
                fmt::format("{}/iter{}/", label, i), names, out);
      const auto resolve = [&](const std::string& name) {
        const auto it = names.find(name);
        return it == names.end() ? name : it->second;
      };
      for (int k = 0; k < carried; ++k)
        state[static_cast<std::size_t>(k)] = resolve(body->output(1 + k).name());
      for (int j = 0; j < scans; ++j)
        scanned[static_cast<std::size_t>(j)].push_back(
            resolve(body->output(1 + carried + j).name()));
    }
    for (int k = 0; k < node.output_size(); ++k) {
      const std::string& result = node.output(k);
      if (result.empty()) continue;
      if (k < carried) {
        out.push_back(identity(state[static_cast<std::size_t>(k)], result,
                               fmt::format("{}/output_{}", label, k)));
        continue;
      }
      // A scan output stacks the iterations' values along a new first axis.
      onnx::NodeProto concat;
      concat.set_op_type("Concat");
      concat.set_name(fmt::format("{}/scan_{}", label, k - carried));
      auto* axis = concat.add_attribute();
      axis->set_name("axis");
      axis->set_type(onnx::AttributeProto::INT);
      axis->set_i(0);
      std::string axes;
      if (opset_ >= 13) {
        Known zero;
        zero.dims = {1};
        zero.ints = {0};
        axes = add_initializer(zero, result + "/axes");
      }
      std::int64_t i = 0;
      for (const auto& value : scanned[static_cast<std::size_t>(k - carried)]) {
        onnx::NodeProto unsqueeze;
        unsqueeze.set_op_type("Unsqueeze");
        unsqueeze.set_name(fmt::format("{}/scan_{}/iter{}", label, k - carried, i));
        unsqueeze.add_input(value);
        if (opset_ >= 13) {
          unsqueeze.add_input(axes);
        } else {
          auto* a = unsqueeze.add_attribute();
          a->set_name("axes");
          a->set_type(onnx::AttributeProto::INTS);
          a->add_ints(0);
        }
        const std::string stacked = fresh(fmt::format("{}/iter{}", result, i++));
        unsqueeze.add_output(stacked);
        out.push_back(std::move(unsqueeze));
        concat.add_input(stacked);
      }
      concat.add_output(result);
      out.push_back(std::move(concat));
    }
    return out;
  }

  onnx::GraphProto& graph_;
  std::int64_t opset_ = 0;
  std::set<std::string> initializer_names_;
  std::set<std::string> taken_;
  std::map<std::string, Known> known_;
  std::map<std::string, std::vector<std::int64_t>> shapes_;
};

}  // namespace

int fold_shape_tensors(onnx::ModelProto& model) { return Folder(model).run(); }

}  // namespace truepeak::estimate::onnx_detail
