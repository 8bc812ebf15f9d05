// ONNX models in: reads a .onnx file with the ONNX library (protobuf), binds its dynamic
// dimensions, runs ONNX shape inference and maps the nodes to the estimator's ops, modelling the
// fusions an inference runtime applies.
//
// Op mapping (ONNX node -> estimator op):
//   Conv (1-D/2-D; groups, strides, pads, dilations, auto_pad)  -> conv2d (1-D as H = 1)
//   Gemm, MatMul with a 2-D constant right operand               -> linear (weight as [in, out])
//   MatMul of two activations (batched, broadcast)               -> matmul
//   Relu, Sigmoid, Tanh, Erf, Clip, Add, Mul, Div, Pow, Where, Cast, Reduce*, ... -> elementwise
//   BatchNormalization, LayerNormalization, Instance/GroupNorm   -> norm
//   Softmax, LogSoftmax                                          -> softmax
//   MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool       -> pool
//   Gather of rows of a constant 2-D table                       -> embedding
//   Reshape, Flatten, (Un)Squeeze, Identity, Dropout, Slice, Split -> reshape (free: views in
//     PyTorch; a runtime that copies Slice/Split pays a memory pass this does not count)
//   Transpose, Expand, Tile, Pad, Resize, Gather of activations  -> transpose (a real copy:
//     output-sized read + write)
//   Concat                                                       -> concat (a real copy)
//   Constant, Shape, Size and every node computable from constants and input shapes -> free
//     (shape code is evaluated at load time, If/Loop on such values inlined/unrolled:
//     onnx_fold.cpp, onnx_shape_eval.cpp)
//   anything else                                                -> elementwise "unknown:TYPE",
//     memory-bound on its tensors, and counted in `unknown_ops` + a warning
// A node this ONNX library has no schema for (a custom domain's, or a standard op newer than the
// library, such as Gelu of opset 20) gets no shape from inference: an elementwise one writes its
// inputs' broadcast shape, any other is taken to write the shape of its first floating-point
// activation, else of its first input (with a warning), so that the nodes after it still get
// shapes.
// Rewrites (what inference runtimes do, all general rules, see onnx_map.cpp):
//   BatchNormalization after Conv folds into it; MatMul/Gemm/Conv + Add(bias) is one op with a
//   bias epilogue; a Transpose swapping a MatMul operand's last two axes is a transposed GEMM
//   operand; exporter decompositions of one framework op are that op again: erf/tanh GELU, SiLU,
//   HardSwish, Mish -> one elementwise; ReduceMean/Sub/Pow/Sqrt/Div (LayerNorm before opset 17)
//   and the RMSNorm form -> one norm; ReduceMax/Exp/ReduceSum/Div -> one softmax;
//   activation epilogues on GEMM/conv only with ImportRules::fuse_activations.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "estimate/graph.hpp"

namespace truepeak::estimate {

// One `--input-shape NAME=1x3x224x224`.
struct InputShape {
  std::string name;
  std::vector<std::int64_t> dims;
};
// Parses "NAME=1x3x224x224" (also "NAME:1,3,224,224"). Throws InputError.
InputShape parse_input_shape(const std::string& text);

// What a runtime folds of the graph as it runs it (a runtime record's fuse_activations and
// conv_batchnorm_apart): the import folds the same.
struct ImportRules {
  // Fold an activation that follows a GEMM/convolution into it (Conv+ReLU, Linear+GELU
  // epilogues, as ONNX Runtime, TensorRT and oneDNN post-ops do). Off by default: PyTorch runs
  // them as their own (in-place) kernels, also in a frozen TorchScript graph on oneDNN.
  // Bias epilogues are always applied.
  bool fuse_activations = false;
  // With fuse_activations, the activations that fold (names as Op::fn: "relu", "silu", ...);
  // empty: every activation the importer can fold.
  std::vector<std::string> fused_activations;
  // Fold a batch norm that follows a convolution into the convolution's weights, as an ONNX
  // export in inference mode, a graph optimizer and the library do. Off: the batch norm stays
  // an op of its own (norm), as a runtime that runs the module as written computes it.
  bool fold_batchnorm = true;
  auto operator<=>(const ImportRules&) const = default;
};

struct OnnxOptions {
  // Values for dynamic dimensions of the graph inputs: a dimension named like a batch
  // ("batch", "N", "batch_size", ...) or the first dimension takes `batch`; one named like a
  // sequence ("seq", "sequence", "length", "tokens", ...) or the second dimension of an integer
  // (token-id) input takes `seq`. `input_shapes` fix whole inputs and win over all of these.
  // An input whose batch dimension is fixed in the file to another value than the batch is an
  // InputError (unless `input_shapes` give its whole shape): the graph's reshapes were exported
  // for that batch. A dimension written as a sum
  // ("past_sequence_length + 1") is the sum of its terms' values.
  std::optional<std::int64_t> batch;
  std::optional<std::int64_t> seq;
  std::vector<InputShape> input_shapes;
  ImportRules rules;
  // A dimension named like a KV-cache length ("past_sequence_length", "cache", "context", ...)
  // takes `context`, or `seq` without one.
  std::optional<std::int64_t> context;
  // `batch` is only a default (no --batch given): a batch that `input_shapes` fix wins over it.
  // Otherwise a batch they fix to another value is an InputError.
  bool batch_is_default = false;
  // The size taken for each dimension the graph computes from its data rather than from its
  // input shapes: the boxes NonMaxSuppression keeps, the elements NonZero finds, a TopK's k or a
  // Loop's trip count computed from values, a resize to a size read from a box. Capped by what the
  // op's inputs allow (NonZero over 50 elements finds at most 50). Unset: kDataDependentSize.
  std::optional<std::int64_t> data_dependent_size;
};

inline constexpr std::int64_t kDataDependentSize = 100;

// A size the graph computes from its data, which the estimate takes as given (the estimate holds
// for that size). One per node, or per node of a loop body for all its unrolled copies.
struct OnnxAssumption {
  std::string node;          // the node's name; an unrolled loop's copies as "LOOP/iter*/NODE"
  std::string op_type;       // "NonMaxSuppression", "NonZero", "TopK", "Loop", "If", "Resize", ...
  std::string what;          // what depends on the data: "boxes kept", "trip count", "branch", ...
  std::int64_t assumed = 0;  // the size assumed (for "branch": 1 = then, 0 = else)
  std::optional<std::int64_t> at_most;  // the largest size the op's inputs allow, where known
  int copies = 1;                       // nodes it stands for (the iterations of an unrolled loop)
  std::string text;                     // one line, as in `warnings`
};

struct OnnxImport {
  Model model;
  // Human-readable, one line each: unknown node types with counts, ignored attributes, ...
  std::vector<std::string> warnings;
  // Node types the importer does not know, with their counts (costed memory-bound).
  std::map<std::string, int> unknown_ops;
  // What the importer folded: {"batchnorm into conv", 20}, {"bias into linear", 73}, ...
  std::map<std::string, int> fusions;
  int onnx_nodes = 0;  // nodes in the file's main graph
  // The batch the graph was bound to (the first dimension of its inputs), when it has one.
  std::optional<std::int64_t> batch;
  // The sizes computed from data that the estimate assumed; each is also a line of `warnings`.
  std::vector<OnnxAssumption> assumptions;
};

// Reads a .onnx file. Throws InputError (one line naming the file) when the file is missing,
// truncated or malformed, when a dynamic dimension has no value, or when the shape of an op that
// needs one cannot be evaluated (naming the first op whose output shape could not be, and what it
// read). A size computed from data is assumed (OnnxOptions::data_dependent_size) and listed in
// `assumptions` (onnx_assume.cpp).
OnnxImport load_onnx(const std::string& path, const OnnxOptions& options = {});

// One line for each of `assumptions`, alike ones (a step repeated per class) merged into one: the
// lines the import also puts in `warnings`.
std::vector<std::string> assumption_lines(const std::vector<OnnxAssumption>& assumptions);
// The same from the file's bytes; `where` names it in messages.
OnnxImport onnx_from_bytes(const std::string& bytes, const std::string& where,
                           const OnnxOptions& options = {});

// Counts as one line: "Einsum x1, custom.Foo x2" (unknown_ops, fusions).
std::string count_list(const std::map<std::string, int>& counts);

// True when the path names an ONNX file (extension ".onnx", any case).
bool is_onnx_path(const std::string& path);

}  // namespace truepeak::estimate
