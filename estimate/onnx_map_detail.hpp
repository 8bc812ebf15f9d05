// Internal to onnx_map*.cpp: the Mapper, which turns a parsed ONNX graph into estimator ops.
// Its tensor facts and the result it returns are in onnx_map.cpp, the rewrites an inference
// runtime applies in onnx_map_rewrites.cpp, the ops it emits in onnx_map_emit.cpp and, for GEMMs,
// convolutions and pools, in onnx_map_gemm_conv.cpp. Not part of the importer's interface.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "estimate/graph.hpp"
#include "estimate/onnx_graph.hpp"

namespace truepeak::estimate::onnx_detail::mapping {

using Dims = std::vector<std::int64_t>;

// Elementwise and reduce node types (onnx_map.cpp).
const std::set<std::string>& unary_ops();
const std::set<std::string>& binary_ops();
const std::set<std::string>& reduce_ops();

// Element count, saturated at the int64 maximum (a count that large is refused where the
// estimate binds the graph, naming the op).
std::int64_t numel(const Dims& dims);

inline Shape to_shape(const Dims& dims) { return Shape(dims.begin(), dims.end()); }

class Mapper {
 public:
  // Nodes rebuilt into one framework op: read `input` (+ weights), write `output`.
  struct Region {
    OpKind kind;
    std::string fn;
    std::string input;
    std::string output;
    std::vector<std::string> weights;
  };

  Mapper(ParsedGraph graph, const OnnxOptions& options);
  OnnxImport run();

 private:
  // ---- tensor facts (onnx_map.cpp) ------------------------------------------------------
  bool is_constant(const std::string& t) const { return t.empty() || constants_.count(t) > 0; }
  bool has_shape(const std::string& t) const { return g_.shapes.count(t) > 0; }
  const Dims& shape_of(const std::string& t, const Node& node) const;
  // Why a tensor has no shape: the first node on the way to it whose output shape could not be
  // evaluated although its inputs' shapes are known, what it read, and what the user can give.
  std::string why_unshaped(const std::string& t) const;
  // A parameter: a floating-point constant with more than one element (scalars such as eps or
  // the GELU constants live in registers, not memory).
  bool is_parameter(const std::string& t) const;
  int single_consumer(const std::string& t) const;
  TensorRef ref(const std::string& t, const Node& node) const { return {t, to_shape(shape_of(t, node))}; }
  // For ops costed on whatever shapes are known: unknown ones are left out and reported once.
  std::optional<TensorRef> ref_if_known(const std::string& t, const Node& node);
  void count_fusion(const std::string& what) { ++result_.fusions[what]; }
  [[noreturn]] void fail(const Node& node, const std::string& why) const;
  // The shape of a GEMM's, convolution's or pool's output, which its cost reads: known, of
  // `rank` dimensions (any rank when 0), none of them 0. Shape inference leaves it unknown when
  // the node's attributes do not fit its inputs.
  const Dims& require_output(const Node& node, const std::string& out, std::size_t rank = 0) const;
  void require_positive(const Node& node, const std::string& tensor, const Dims& dims) const;

  // ---- rewrites (onnx_map_rewrites.cpp) ------------------------------------------------
  void fold_constants();
  void fuse_batchnorm_into_conv();
  void fuse_bias_into_gemm();

  // Transpose(perm swaps the last two axes) feeding only MatMuls: GEMM libraries read the
  // operand transposed, no copy is made.
  void fold_transposes_into_matmul();
  bool is_region_op(const Node& node) const;

  // What a region of elementwise/reduce nodes fed by one tensor computes, when it is one
  // framework op that the exporter decomposed; nullopt otherwise (its nodes stay separate).
  struct RegionKind {
    OpKind kind;
    std::string fn;
  };
  static std::optional<RegionKind> classify(const std::multiset<std::string>& ops);
  void find_framework_regions();
  std::string output_of(int node) const;

  // ---- emission (onnx_map_emit.cpp; GEMMs, convolutions, pools: onnx_map_gemm_conv.cpp) ---
  Op make_op(const Node& node, OpKind kind, std::string fn = {});
  void push(Op op);

  // Readers of a tensor, counting a rebuilt region once.
  std::size_t effective_uses(const std::string& t) const;
  static const std::set<std::string>& epilogue_activations();
  void emit(int index);

  // Inputs split into activations and parameters; constants that are not parameters (shape
  // vectors, scalars) are left out.
  void add_operands(Op& op, const Node& node, std::size_t first = 0);
  bool set_output(Op& op, const Node& node, const std::string& out);
  void emit_simple(const Node& node, OpKind kind, std::string fn);
  void emit_region(const Node& node, const Region& region);

  // A Conv's or pool's window over the spatial axes of `x` (the axes after batch and channels):
  // one kernel size, stride and dilation per axis, two pads per axis (begin, end). Each window
  // must fit its padded input, or the node has no output to cost.
  struct Window {
    Dims kernel, strides, dilations, pads;
    std::string auto_pad;
  };
  Window window_of(const Node& node, const Dims& x, const Dims& kernel) const;
  void emit_conv(int index, const Node& node);
  void emit_gemm(int index, const Node& node);
  void emit_norm(const Node& node);
  void emit_pool(const Node& node);
  void emit_gather(const Node& node);
  void emit_view(const Node& node);

  // A copy reads as many elements as it writes: the input is counted with the output's shape
  // (Gather of a few rows, Expand, Pad and Resize read far less or more than their whole input
  // would say).
  void emit_copy(const Node& node, OpKind kind);
  void emit_concat(const Node& node);
  void emit_unknown(const Node& node);

  // The model's inputs, counts, description and warnings (onnx_map.cpp).
  void finish();

  ParsedGraph g_;
  const OnnxOptions& options_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> consumers_;  // -1: a graph output
  std::vector<bool> done_;
  std::set<std::string> constants_;
  std::map<int, std::string> output_alias_;  // node -> tensor its fused op writes
  std::map<int, std::string> bias_;          // node -> bias folded into it
  std::map<std::string, std::string> transposed_source_;
  std::map<int, Region> regions_;            // last node of a region -> the region
  std::map<int, int> representative_;        // region member -> the region's last node
  std::map<std::string, std::size_t> op_writing_;  // tensor -> index of the op that writes it
  std::set<std::string> unshaped_;
  int folded_ = 0;
  int region_count_ = 0;
  OnnxImport result_;
};

}  // namespace truepeak::estimate::onnx_detail::mapping
