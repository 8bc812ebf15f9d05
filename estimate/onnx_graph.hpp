// The ONNX graph after parsing and shape inference, with no protobuf types left: what the op
// mapping (onnx_map.cpp) works on. Internal to the ONNX importer.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "estimate/onnx_import.hpp"

namespace truepeak::estimate::onnx_detail {

struct Node {
  std::string name;     // the node's name, or "<op_type>_<index>" when it has none
  std::string op_type;  // "Conv", "MatMul", ...
  std::string domain;   // "" for the default ONNX domain
  std::vector<std::string> inputs;   // "" for an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, std::vector<std::int64_t>> ints;  // INT and INTS attributes
  std::map<std::string, std::vector<double>> floats;      // FLOAT and FLOATS attributes
  std::map<std::string, std::string> strings;             // STRING attributes
  bool has_subgraph = false;  // an If/Loop/Scan left as it is (not inlined at load time)

  std::int64_t int_attr(const std::string& key, std::int64_t fallback) const;
  std::vector<std::int64_t> ints_attr(const std::string& key) const;  // empty when absent
};

struct ParsedGraph {
  std::string where;  // the file, for messages
  std::int64_t opset = 0;
  std::string producer;
  std::vector<Node> nodes;  // in the file's (topological) order, If/Loop bodies inlined where known
  int file_nodes = 0;       // nodes in the file's main graph
  // Tensors whose shape is fully known after binding and shape inference.
  std::map<std::string, std::vector<std::int64_t>> shapes;
  std::set<std::string> initializers;   // parameters stored in the file
  std::set<std::string> float_tensors;  // element type is floating point
  std::vector<std::string> inputs;      // graph inputs that are not initializers
  std::vector<std::string> outputs;
  std::vector<std::string> warnings;
  std::optional<std::int64_t> batch;  // what the inputs' batch dimension was bound to
  // Sizes computed from data that were assumed (also in `warnings`).
  std::vector<OnnxAssumption> assumptions;
  // Tensors whose shape depends on the inputs' values, not only on their shapes.
  std::set<std::string> data_shaped;
  // Short descriptions of the small constant values ("[1, -1, 96]"), for messages.
  std::map<std::string, std::string> small_values;
};

// Elementwise node types (onnx_map.cpp's tables): one input, or several broadcast together, and
// an output of their (broadcast) shape.
bool is_unary_elementwise(const std::string& op_type);
bool is_binary_elementwise(const std::string& op_type);

// Parses, checks and shape-infers. Throws InputError.
ParsedGraph parse_onnx(const std::string& bytes, const std::string& where, const OnnxOptions& options);

// Maps the parsed graph to estimator ops and applies the fusions.
OnnxImport map_onnx(ParsedGraph graph, const OnnxOptions& options);

}  // namespace truepeak::estimate::onnx_detail
