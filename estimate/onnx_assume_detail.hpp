// Internal to onnx_assume*.cpp: which tensors' values and shapes the graph computes from its data.
// Defined in onnx_assume_taint.cpp; the sizes assumed from it are in onnx_assume.cpp. Not part of
// the importer's interface (onnx_assume.hpp).
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>

namespace truepeak::estimate::onnx_detail::assume {

struct Taint {
  std::set<std::string> value;  // values computed from the inputs' values
  std::set<std::string> shape;  // shapes computed from them
};

// Whether `node` itself makes a shape from data (rather than passing on a shape made before it):
// the nodes whose output sizes are assumed.
bool sizes_from_data(const onnx::NodeProto& node, const Taint& taint);

// The taint of each tensor of `graph`, from its inputs (not its initializers) through its nodes.
Taint taint_of(const onnx::GraphProto& graph);

}  // namespace truepeak::estimate::onnx_detail::assume
