// Sizes an ONNX graph computes from its data (see onnx_assume.cpp). Internal to the ONNX importer.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "estimate/onnx_import.hpp"

namespace truepeak::estimate::onnx_detail {

// The tensors whose shape depends on the values of the graph's inputs (not only on their
// shapes): the outputs of NonZero, NonMaxSuppression, Unique, Compress, of a Reshape, Resize,
// TopK, Slice, ... whose shape operand is computed from data, and everything shaped after them.
std::set<std::string> data_shaped_tensors(const onnx::GraphProto& graph);

// For each node that makes a size from data (NonZero, NonMaxSuppression, ..., or an op whose shape
// operand is computed from data) and whose inputs all have known shapes, none of them computed
// from a tensor whose shape is still unknown, while an output has none: its unknown dimensions take
// `size` (capped by what its inputs allow), put in `assumed` (value_info each inference pass starts
// from); a Loop whose trip count comes from data gets `size` as its trip count, an If on data its
// larger branch, both rewritten in `model` for the folding to unroll or inline. Each is recorded in
// `assumptions`. Returns how many it did.
int assume_data_dependent(onnx::ModelProto& model,
                          std::map<std::string, onnx::ValueInfoProto>& assumed,
                          std::vector<OnnxAssumption>& assumptions, std::int64_t size);

// Merges the assumptions made for the copies of one node of an unrolled loop body into one entry
// and writes each entry's line.
std::vector<OnnxAssumption> summarize_assumptions(std::vector<OnnxAssumption> assumptions);

// The warning lines for `assumptions`: one each, or one for several alike (same op type, what,
// size assumed and bound), naming the first few nodes.
std::vector<std::string> assumption_warnings(const std::vector<OnnxAssumption>& assumptions);

}  // namespace truepeak::estimate::onnx_detail
