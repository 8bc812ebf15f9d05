// Internal to onnx_parse*.cpp: the steps of reading an ONNX file that parse_onnx runs.
// Binding the inputs (onnx_parse_bind.cpp), checking the graph (onnx_parse_check.cpp), shapes for
// nodes without a schema (onnx_parse_no_schema.cpp), and the helpers they share (onnx_parse.cpp).
// Not part of the importer's interface (onnx_graph.hpp).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "estimate/onnx_import.hpp"

namespace truepeak::estimate::onnx_detail::parse {

using Dims = std::vector<std::int64_t>;

// ---- onnx_parse.cpp ---------------------------------------------------------------------------

// "" for the default ONNX domain, however the file spells it.
std::string domain_of(const std::string& domain);


// A value's element type and dimensions, when they are all known.
std::optional<std::pair<std::int32_t, Dims>> known_type(const onnx::TypeProto& type);

// ---- onnx_parse_bind.cpp ----------------------------------------------------------------------

// Gives every dimension of every graph input a value, or throws naming the one that has none.
// Returns the batch the inputs were bound to, when one of them has a batch dimension.
std::optional<std::int64_t> bind_inputs(onnx::GraphProto& graph, const std::set<std::string>& initializers,
                                        const OnnxOptions& options, const std::string& where);

// ---- onnx_parse_check.cpp ---------------------------------------------------------------------

// Every node reads only what the graph inputs, the initializers or an earlier node define.
void check_structure(const onnx::GraphProto& graph, const std::string& where);

// Checks what ONNX shape inference takes on trust, in the graph and in the bodies of If/Loop/Scan
// nodes (inference reads those too): tensors stored in the file have no negative dimension, and a
// windowed op's kernel, strides and dilations are at least 1, its pads at least 0, its group at
// least 1. Each failure is one line naming the node and the attribute.
void check_attributes(const onnx::GraphProto& graph, const std::string& where);

// Gives a convolution without kernel_shape the one of its weight (its dimensions past the first
// two) where the weight's shape is known before inference: an initializer or Constant, a
// value_info given in full (the shapes assumed for ops without a schema), or a DequantizeLinear,
// QuantizeLinear, Identity or Cast of one; in the graph and in the bodies of If/Loop/Scan nodes.
// Run before every pass of inference. ONNX shape inference takes a missing kernel shape from the
// weight and then indexes the input's spatial axes by it unchecked, which reads past them when
// the input has fewer; with the attribute set, it compares the two and fails in one line.
void fill_kernel_shapes(onnx::GraphProto& graph);

// ---- onnx_parse_no_schema.cpp -----------------------------------------------------------------

// Output shapes that ONNX shape inference cannot give because this ONNX library has no schema for
// the node: a standard op newer than the library (Gelu, opset 20) or an op of a custom domain.
// An elementwise op writes its inputs' broadcast shape; any other such op is taken to write
// tensors shaped like its first floating-point activation (else its first input), and is counted
// in `guessed` (op type -> nodes) for a warning. The shapes go to `assumed`, which every inference
// pass starts from, so that the nodes after them get shapes too. Returns how many tensors got a
// shape.
int assume_shapes(const onnx::ModelProto& model, std::map<std::string, onnx::ValueInfoProto>& assumed,
                  std::map<std::string, int>& guessed, bool patient);

}  // namespace truepeak::estimate::onnx_detail::parse
