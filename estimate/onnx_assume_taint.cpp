// Which tensors of an ONNX graph have values or shapes computed from its data (NonZero's output,
// a Reshape whose target comes from data, and everything shaped after them).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "estimate/onnx_assume.hpp"
#include "estimate/onnx_assume_detail.hpp"

namespace truepeak::estimate::onnx_detail {
namespace assume {
namespace {

// Ops whose output size is the data's to say, whatever their inputs' shapes.
const std::set<std::string>& inherently_data_dependent() {
  static const std::set<std::string> ops = {"NonZero", "NonMaxSuppression", "Unique", "Compress"};
  return ops;
}

// The inputs whose values size an op's output.
const std::map<std::string, std::vector<int>>& shape_operands() {
  static const std::map<std::string, std::vector<int>> ops = {
      {"Reshape", {1}},     {"Expand", {1}},       {"Tile", {1}},       {"ConstantOfShape", {0}},
      {"Range", {0, 1, 2}}, {"Resize", {1, 2, 3}}, {"Upsample", {1}},   {"Slice", {1, 2, 3, 4}},
      {"Pad", {1, 3}},      {"OneHot", {1}},       {"Squeeze", {1}},    {"Unsqueeze", {1}},
      {"Split", {1}},       {"TopK", {1}},         {"ReduceSum", {1}},  {"ReduceMean", {1}},
      {"ReduceMax", {1}},   {"ReduceMin", {1}},    {"ReduceProd", {1}}, {"CenterCropPad", {1}},
      {"MaxUnpool", {2}},   {"Loop", {0, 1}},      {"If", {0}},         {"Col2Im", {1, 2}}};
  return ops;
}

// Whether `node`'s output shapes depend on data, given what its inputs' taint is.
bool shaped_by_data(const onnx::NodeProto& node, const Taint& taint) {
  if (inherently_data_dependent().count(node.op_type())) return true;
  if (const auto it = shape_operands().find(node.op_type()); it != shape_operands().end()) {
    for (const int k : it->second) {
      if (k < node.input_size() && taint.value.count(node.input(k))) return true;
    }
  }
  return std::any_of(node.input().begin(), node.input().end(),
                     [&](const std::string& in) { return taint.shape.count(in) > 0; });
}

}  // namespace

bool sizes_from_data(const onnx::NodeProto& node, const Taint& taint) {
  if (inherently_data_dependent().count(node.op_type())) return true;
  const auto it = shape_operands().find(node.op_type());
  if (it == shape_operands().end()) return false;
  return std::any_of(it->second.begin(), it->second.end(), [&](int k) {
    return k < node.input_size() && taint.value.count(node.input(k)) > 0;
  });
}

Taint taint_of(const onnx::GraphProto& graph) {
  Taint taint;
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  for (const auto& in : graph.input()) {
    if (!initializers.count(in.name())) taint.value.insert(in.name());
  }
  for (const auto& node : graph.node()) {
    const bool shape = shaped_by_data(node, taint);
    bool value = shape;
    if (node.op_type() == "Shape" || node.op_type() == "Size") {
      value = node.input_size() > 0 && taint.shape.count(node.input(0)) > 0;
    } else {
      for (const auto& in : node.input()) value = value || taint.value.count(in) > 0;
    }
    // A node without inputs (Constant, a random generator) and a control-flow node reading the
    // graph's data from its bodies: taken as their explicit inputs say.
    for (const auto& out : node.output()) {
      if (out.empty()) continue;
      if (value) taint.value.insert(out);
      if (shape) taint.shape.insert(out);
    }
  }
  return taint;
}

}  // namespace assume

std::set<std::string> data_shaped_tensors(const onnx::GraphProto& graph) {
  return assume::taint_of(graph).shape;
}

}  // namespace truepeak::estimate::onnx_detail
