// The ONNX importer on the small files written by scripts/make_onnx_fixtures.py.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "estimate/graph.hpp"
#include "estimate/onnx_import.hpp"

namespace truepeak::estimate {
namespace {

std::string fixture(const std::string& name) {
  return std::string(TRUEPEAK_SOURCE_DIR) + "/tests/estimate/data/onnx/" + name;
}

const Op& find_op(const Graph& graph, const std::string& name) {
  const auto it = std::find_if(graph.ops.begin(), graph.ops.end(), [&](const Op& op) { return op.name == name; });
  if (it == graph.ops.end()) throw std::runtime_error("no op named " + name);
  return *it;
}

std::vector<std::int64_t> dims(const Shape& shape) { return eval_shape(shape, {}); }

OnnxOptions batch_and_seq(std::int64_t batch, std::int64_t seq) {
  OnnxOptions options;
  options.batch = batch;
  options.seq = seq;
  return options;
}

int count_kind(const Graph& graph, OpKind kind, const std::string& fn = "") {
  return static_cast<int>(std::count_if(graph.ops.begin(), graph.ops.end(), [&](const Op& op) {
    return op.kind == kind && (fn.empty() || op.fn == fn);
  }));
}

TEST(OnnxImport, BatchNormAfterConvStaysAnOpWhereNotFolded) {
  OnnxOptions options;
  options.batch = 4;
  const auto folded = load_onnx(fixture("tiny_cnn.onnx"), options);
  options.rules.fold_batchnorm = false;
  const auto result = load_onnx(fixture("tiny_cnn.onnx"), options);
  const auto& graph = result.model.forward;
  EXPECT_EQ(result.fusions.count("batchnorm folded into conv"), 0u);
  EXPECT_EQ(count_kind(graph, OpKind::norm, "batchnorm"), 1);
  // conv1 writes its own output, which the batch norm reads; one op more than folded.
  const auto& conv1 = find_op(graph, "conv1");
  EXPECT_NE(conv1.output.name, "b1");
  EXPECT_EQ(graph.ops.size(), folded.model.forward.ops.size() + 1);
  const auto bn = std::find_if(graph.ops.begin(), graph.ops.end(), [](const Op& op) { return op.kind == OpKind::norm; });
  ASSERT_NE(bn, graph.ops.end());
  ASSERT_FALSE(bn->inputs.empty());
  EXPECT_EQ(bn->inputs[0].name, conv1.output.name);
}

TEST(OnnxImport, CnnMapsConvPoolGemmAndFoldsBatchNorm) {
  OnnxOptions options;
  options.batch = 4;
  const auto result = load_onnx(fixture("tiny_cnn.onnx"), options);
  const auto& graph = result.model.forward;
  EXPECT_EQ(result.model.kind, "onnx");
  EXPECT_EQ(result.onnx_nodes, 9);
  ASSERT_EQ(graph.inputs.size(), 1u);
  EXPECT_EQ(dims(graph.inputs[0].shape), (std::vector<std::int64_t>{4, 3, 32, 32}));

  // conv1 writes what the folded batch norm wrote.
  const auto& conv1 = find_op(graph, "conv1");
  EXPECT_EQ(conv1.kind, OpKind::conv2d);
  EXPECT_EQ(conv1.output.name, "b1");
  EXPECT_EQ(conv1.pad, 1);
  EXPECT_EQ(conv1.kernel_h, 3);
  EXPECT_EQ(result.fusions.at("batchnorm folded into conv"), 1);
  EXPECT_EQ(count_kind(graph, OpKind::norm), 0);

  const auto& dw = find_op(graph, "dwconv");
  EXPECT_EQ(dw.groups, 8);
  EXPECT_EQ(dw.stride, 2);
  EXPECT_EQ(dims(dw.output.shape), (std::vector<std::int64_t>{4, 8, 8, 8}));
  ASSERT_EQ(dw.weights.size(), 2u);  // weight and bias
  EXPECT_EQ(dims(dw.weights[0].shape), (std::vector<std::int64_t>{8, 1, 3, 3}));

  const auto& pool = find_op(graph, "pool1");
  EXPECT_EQ(pool.kind, OpKind::pool);
  EXPECT_EQ(pool.fn, "max");
  const auto& gap = find_op(graph, "gap");
  EXPECT_EQ(gap.fn, "global_avg");  // a kind of its own: a reduction, not a window pool
  EXPECT_EQ(gap.kernel_h, 8);

  // Gemm with transB: weight as [in, out].
  const auto& fc = find_op(graph, "fc");
  EXPECT_EQ(fc.kind, OpKind::linear);
  ASSERT_EQ(fc.weights.size(), 2u);
  EXPECT_EQ(dims(fc.weights[0].shape), (std::vector<std::int64_t>{8, 10}));
  EXPECT_EQ(dims(fc.output.shape), (std::vector<std::int64_t>{4, 10}));

  // Activations stay separate by default; the clip bounds (scalars) are not parameters.
  const auto& relu6 = find_op(graph, "relu6");
  EXPECT_EQ(relu6.fn, "clip");
  EXPECT_TRUE(relu6.weights.empty());
  EXPECT_EQ(find_op(graph, "flatten").kind, OpKind::reshape);
  EXPECT_TRUE(result.unknown_ops.empty());

  // Parameters: conv1 8*27, dwconv 72+8, fc 80+10 (the folded batch norm's are not read).
  EXPECT_DOUBLE_EQ(count_params(graph, {}), 216 + 80 + 90);
}

TEST(OnnxImport, ActivationEpiloguesFoldWhenAsked) {
  OnnxOptions options;
  options.batch = 1;
  options.rules.fuse_activations = true;
  const auto result = load_onnx(fixture("tiny_cnn.onnx"), options);
  const auto& graph = result.model.forward;
  EXPECT_EQ(count_kind(graph, OpKind::elementwise), 0);
  EXPECT_EQ(find_op(graph, "conv1").output.name, "r1");
  EXPECT_EQ(find_op(graph, "dwconv").output.name, "r2");
  EXPECT_EQ(result.fusions.at("relu epilogue into conv2d"), 1);
  EXPECT_EQ(result.fusions.at("clip epilogue into conv2d"), 1);
}

TEST(OnnxImport, OnlyTheActivationsARuntimeFoldsFold) {
  OnnxOptions options;
  options.batch = 1;
  options.rules.fuse_activations = true;
  options.rules.fused_activations = {"relu"};
  const auto result = load_onnx(fixture("tiny_cnn.onnx"), options);
  const auto& graph = result.model.forward;
  EXPECT_EQ(find_op(graph, "conv1").output.name, "r1");
  EXPECT_NE(find_op(graph, "dwconv").output.name, "r2");  // its clip runs as an op of its own
  EXPECT_EQ(count_kind(graph, OpKind::elementwise), 1);
  EXPECT_EQ(result.fusions.at("relu epilogue into conv2d"), 1);
  EXPECT_EQ(result.fusions.count("clip epilogue into conv2d"), 0u);
}

TEST(OnnxImport, TransformerRebuildsFrameworkOpsAndCountsUnknownNodes) {
  OnnxOptions options;
  options.batch = 2;
  options.seq = 5;
  const auto result = load_onnx(fixture("tiny_transformer.onnx"), options);
  const auto& graph = result.model.forward;

  const auto& embed = find_op(graph, "embed");
  EXPECT_EQ(embed.kind, OpKind::embedding);
  EXPECT_EQ(dims(embed.output.shape), (std::vector<std::int64_t>{2, 5, 16}));

  // LayerNorm decomposed into 9 nodes is one norm reading x0 and its gamma/beta.
  ASSERT_EQ(count_kind(graph, OpKind::norm, "layernorm"), 1);
  const auto& ln = *std::find_if(graph.ops.begin(), graph.ops.end(), [](const Op& op) { return op.kind == OpKind::norm; });
  ASSERT_EQ(ln.inputs.size(), 1u);
  EXPECT_EQ(ln.inputs[0].name, "x0");
  EXPECT_EQ(ln.output.name, "x1");
  EXPECT_EQ(ln.weights.size(), 2u);

  // MatMul + Add(bias) is one linear writing the Add's output.
  const auto& qkv = find_op(graph, "qkv");
  EXPECT_EQ(qkv.kind, OpKind::linear);
  EXPECT_EQ(qkv.output.name, "qkv1");
  EXPECT_EQ(dims(qkv.weights[0].shape), (std::vector<std::int64_t>{16, 48}));
  EXPECT_EQ(result.fusions.at("bias add into linear/matmul"), 4);

  // Heads: the Reshape's shape came from a Shape->Gather->Concat chain (constant-folded);
  // K^T is a transposed operand of Q.K^T, not a copy.
  EXPECT_EQ(dims(find_op(graph, "q/reshape").output.shape), (std::vector<std::int64_t>{2, 5, 2, 8}));
  const auto& scores = find_op(graph, "scores");
  EXPECT_EQ(scores.kind, OpKind::matmul);
  EXPECT_TRUE(scores.transpose_b);
  EXPECT_EQ(scores.inputs.at(1).name, "k");
  EXPECT_EQ(dims(scores.output.shape), (std::vector<std::int64_t>{2, 2, 5, 5}));
  EXPECT_EQ(find_op(graph, "q/transpose").kind, OpKind::transpose);
  EXPECT_EQ(find_op(graph, "softmax").kind, OpKind::softmax);

  // Erf GELU decomposed into 5 nodes is one elementwise gelu reading the fc1 output.
  ASSERT_EQ(count_kind(graph, OpKind::elementwise, "gelu"), 1);
  EXPECT_EQ(find_op(graph, "gelu/mul_half:gelu").inputs.at(0).name, "f1");

  // No Shape/Gather/Concat of shapes left: they are computed once at load time.
  for (const auto& op : graph.ops) EXPECT_EQ(op.name.rfind("shape/", 0), std::string::npos) << op.name;

  // The Einsum is costed memory-bound and reported with its count.
  EXPECT_EQ(result.unknown_ops.at("Einsum"), 1);
  ASSERT_FALSE(result.warnings.empty());
  EXPECT_NE(result.warnings.front().find("Einsum x1"), std::string::npos) << result.warnings.front();
  EXPECT_EQ(find_op(graph, "mix").fn, "unknown:Einsum");
}

TEST(OnnxImport, TanhGeluIsOneOpOfItsOwn) {
  // GELU's tanh form, decomposed into 8 nodes, is one elementwise gelu_tanh (timed by its own
  // measured rate, not the erf form's) reading the linear's output.
  OnnxOptions options;
  options.batch = 3;
  const auto result = load_onnx(fixture("gelu_tanh.onnx"), options);
  const auto& graph = result.model.forward;
  EXPECT_EQ(count_kind(graph, OpKind::elementwise, "gelu"), 0);
  ASSERT_EQ(count_kind(graph, OpKind::elementwise, "gelu_tanh"), 1);
  const auto& gelu = *std::find_if(graph.ops.begin(), graph.ops.end(),
                                   [](const Op& op) { return op.fn == "gelu_tanh"; });
  EXPECT_EQ(gelu.inputs.at(0).name, "h");
  EXPECT_EQ(gelu.output.name, "y");
  EXPECT_EQ(count_kind(graph, OpKind::elementwise), 1);
}

TEST(OnnxImport, ShapeArithmeticFoldsThroughALongChainOfBlocks) {
  // Twelve channel shuffles, each one's Reshape targets computed from the Shape of the block
  // before: one fold-and-infer pass per block.
  OnnxOptions options;
  options.batch = 2;
  const auto result = load_onnx(fixture("shuffle_chain.onnx"), options);
  const auto& graph = result.model.forward;
  EXPECT_EQ(count_kind(graph, OpKind::conv2d), 12);
  const auto& last = find_op(graph, "s11/conv");
  EXPECT_EQ(dims(last.output.shape), (std::vector<std::int64_t>{2, 8, 4, 4}));
  EXPECT_EQ(dims(find_op(graph, "s11/transpose").output.shape), (std::vector<std::int64_t>{2, 4, 2, 4, 4}));
}

TEST(OnnxImport, ATransposeSaysWhetherItMovesTheInnermostAxis) {
  OnnxOptions options;
  options.batch = 3;
  const auto graph = load_onnx(fixture("transposes.onnx"), options).model.forward;
  EXPECT_EQ(find_op(graph, "heads").fn, "");  // [0, 2, 1, 3]: rows of 8 move whole
  EXPECT_EQ(find_op(graph, "key").fn, "inner");  // [0, 2, 3, 1]
  const auto& reversed = find_op(graph, "reversed");  // no perm: the axes reversed
  EXPECT_EQ(reversed.fn, "inner");
  EXPECT_EQ(dims(reversed.output.shape), (std::vector<std::int64_t>{8, 2, 5, 3}));
  for (const auto& op : graph.ops) EXPECT_EQ(op.kind, OpKind::transpose) << op.name;
}

TEST(OnnxImport, GeluEpilogueFoldsIntoTheLinearWhenAsked) {
  OnnxOptions options;
  options.batch = 1;
  options.seq = 3;
  options.rules.fuse_activations = true;
  const auto result = load_onnx(fixture("tiny_transformer.onnx"), options);
  const auto& graph = result.model.forward;
  EXPECT_EQ(count_kind(graph, OpKind::elementwise, "gelu"), 0);
  EXPECT_EQ(find_op(graph, "fc1").output.name, "g4");
  EXPECT_EQ(result.fusions.at("gelu epilogue into linear"), 1);
}

TEST(OnnxImport, DynamicDimensionsNeedValues) {
  OnnxOptions options;
  options.batch = 1;
  try {
    load_onnx(fixture("tiny_transformer.onnx"), options);  // no --seq
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'sequence'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_onnx(fixture("unnamed_dynamic.onnx"), options), InputError);
  options.input_shapes.push_back(parse_input_shape("x=1x4x7x9"));
  const auto result = load_onnx(fixture("unnamed_dynamic.onnx"), options);
  EXPECT_EQ(dims(result.model.forward.ops.at(0).output.shape), (std::vector<std::int64_t>{1, 4, 7, 9}));

  options.input_shapes = {parse_input_shape("nope=1x4")};
  EXPECT_THROW(load_onnx(fixture("unnamed_dynamic.onnx"), options), InputError);
}

TEST(OnnxImport, FixedBatchConflictIsAnInputError) {
  OnnxOptions options;
  options.batch = 1;
  EXPECT_NO_THROW(load_onnx(fixture("fixed_batch.onnx"), options));
  options.batch = 8;
  EXPECT_THROW(load_onnx(fixture("fixed_batch.onnx"), options), InputError);
  // A whole shape given by the user wins (their reshapes are their business).
  options.input_shapes = {parse_input_shape("image=2x3x32x32")};
  options.batch = 2;
  EXPECT_NO_THROW(load_onnx(fixture("tiny_cnn.onnx"), options));
}

TEST(OnnxImport, NodesWithoutASchemaPassShapesOn) {
  // A custom-domain op feeds a Conv, and Gelu (opset 20, newer than the ONNX library) a ReLU:
  // shape inference gives neither an output shape, and everything after them still gets one.
  OnnxOptions options;
  options.batch = 2;
  const auto result = load_onnx(fixture("no_schema.onnx"), options);
  const auto& graph = result.model.forward;
  const std::vector<std::int64_t> shape{2, 8, 16, 16};
  const auto& custom = find_op(graph, "custom");
  EXPECT_EQ(custom.fn, "unknown:custom.ops.Foo");
  EXPECT_EQ(dims(custom.output.shape), shape);
  ASSERT_EQ(custom.inputs.size(), 1u);
  EXPECT_EQ(find_op(graph, "conv").kind, OpKind::conv2d);
  const auto& gelu = find_op(graph, "gelu");
  EXPECT_EQ(gelu.fn, "gelu");
  EXPECT_EQ(dims(gelu.output.shape), shape);
  EXPECT_EQ(dims(find_op(graph, "relu").output.shape), shape);
  // The [8, 1, 1] shift broadcasts over the ReLU's output.
  EXPECT_EQ(dims(find_op(graph, "shift").output.shape), shape);
  // One that reads what NonZero found (known only at run time) still gets its input's shape.
  EXPECT_EQ(dims(find_op(graph, "after_pick").output.shape), shape);
  // An op that reads token ids and an activation writes the activation's shape.
  EXPECT_EQ(dims(find_op(graph, "mix").output.shape), shape);
  EXPECT_EQ(dims(find_op(graph, "after_mix").output.shape), shape);
  EXPECT_EQ(result.unknown_ops.at("custom.ops.Foo"), 1);
  EXPECT_EQ(result.unknown_ops.count("Gelu"), 0u);
  const auto guessed = std::count_if(result.warnings.begin(), result.warnings.end(), [](const std::string& w) {
    return w.find("custom.ops.Foo x1: this ONNX library has no shape inference") != std::string::npos;
  });
  EXPECT_EQ(guessed, 1);
}

TEST(OnnxImport, ConvolutionAndPoolAttributes) {
  OnnxOptions options;
  options.batch = 2;
  const auto result = load_onnx(fixture("conv_variants.onnx"), options);
  const auto& graph = result.model.forward;

  // Dilation 2 with pads 2 keeps 16x16; the Add of a [1, 8, 1, 1] constant is its bias.
  const auto& dilated = find_op(graph, "dilated");
  EXPECT_EQ(dilated.dilation, 2);
  EXPECT_EQ(dilated.pad, 2);
  EXPECT_EQ(dims(dilated.output.shape), (std::vector<std::int64_t>{2, 8, 16, 16}));
  EXPECT_EQ(dilated.output.name, "db");
  EXPECT_EQ(result.fusions.at("bias add into conv"), 1);

  EXPECT_EQ(find_op(graph, "sigmoid").fn, "sigmoid");
  // A batch norm after no convolution is a norm of its own.
  EXPECT_EQ(find_op(graph, "bn").kind, OpKind::norm);
  EXPECT_EQ(find_op(graph, "bn").fn, "batchnorm");

  const auto& avg = find_op(graph, "avgpool");
  EXPECT_EQ(avg.kind, OpKind::pool);
  EXPECT_EQ(avg.fn, "avg");
  EXPECT_EQ(avg.kernel_h, 3);
  EXPECT_EQ(avg.stride, 2);
  EXPECT_EQ(dims(avg.output.shape), (std::vector<std::int64_t>{2, 8, 8, 8}));

  // SAME_UPPER at stride 2: 8 -> 4.
  EXPECT_EQ(dims(find_op(graph, "same").output.shape), (std::vector<std::int64_t>{2, 8, 4, 4}));
  // Pads only at the end: a 2x2 kernel keeps 8x8.
  EXPECT_EQ(dims(find_op(graph, "asym").output.shape), (std::vector<std::int64_t>{2, 8, 8, 8}));

  // The Constant node is free; the Slice is a view of the first 4 channels.
  for (const auto& op : graph.ops) EXPECT_NE(op.name, "starts");
  const auto& slice = find_op(graph, "slice");
  EXPECT_EQ(slice.kind, OpKind::reshape);
  EXPECT_EQ(dims(slice.output.shape), (std::vector<std::int64_t>{2, 4, 8, 8}));

  // A 1-D convolution is a 2-D one of height 1, output included.
  const auto& conv1d = find_op(graph, "conv1d");
  EXPECT_EQ(conv1d.kind, OpKind::conv2d);
  EXPECT_EQ(conv1d.kernel_h, 1);
  EXPECT_EQ(conv1d.kernel_w, 5);
  EXPECT_EQ(conv1d.stride, 2);
  EXPECT_EQ(dims(conv1d.output.shape), (std::vector<std::int64_t>{2, 6, 1, 16}));

  const auto& ln = find_op(graph, "layernorm");
  EXPECT_EQ(ln.kind, OpKind::norm);
  EXPECT_EQ(ln.fn, "layernorm");
  EXPECT_EQ(ln.weights.size(), 2u);
}

TEST(OnnxImport, ACacheLengthTakesTheContext) {
  OnnxOptions options;
  options.batch = 3;
  options.seq = 8;
  options.context = 20;
  const auto& with_context = load_onnx(fixture("kv_cache.onnx"), options).model.forward;
  EXPECT_EQ(dims(find_op(with_context, "append").output.shape), (std::vector<std::int64_t>{3, 2, 21, 4}));
  // "past_sequence_length + 1": the cache and the new token.
  EXPECT_EQ(dims(find_op(with_context, "gate").output.shape), (std::vector<std::int64_t>{3, 21}));
  options.context.reset();  // the sequence length stands in
  const auto& with_seq = load_onnx(fixture("kv_cache.onnx"), options).model.forward;
  EXPECT_EQ(dims(find_op(with_seq, "append").output.shape), (std::vector<std::int64_t>{3, 2, 9, 4}));
  // A sum past the largest size is an error, not a wrapped-around dimension.
  options.context = std::numeric_limits<std::int64_t>::max();
  try {
    load_onnx(fixture("kv_cache.onnx"), options);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'past_sequence_length + 1') of input 'mask' overflows"),
              std::string::npos)
        << e.what();
  }
  options.context.reset();
  options.seq.reset();
  try {
    load_onnx(fixture("kv_cache.onnx"), options);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'past_sequence_length'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(--context or --seq)"), std::string::npos) << e.what();
  }
}

TEST(OnnxImport, TheBatchComesFromOnePlace) {
  OnnxOptions options;
  options.batch = 1;
  options.batch_is_default = true;
  // Without --batch, a batch given by --input-shape is the graph's.
  options.input_shapes = {parse_input_shape("image=4x3x32x32")};
  EXPECT_EQ(load_onnx(fixture("tiny_cnn.onnx"), options).batch, 4);
  // Given both ways, they must agree.
  options.batch_is_default = false;
  EXPECT_THROW(load_onnx(fixture("tiny_cnn.onnx"), options), InputError);
  options.batch = 4;
  EXPECT_EQ(load_onnx(fixture("tiny_cnn.onnx"), options).batch, 4);
  // So for an input whose batch the file fixes (at 1 here).
  options.input_shapes = {parse_input_shape("x=8x4x8x8")};
  options.batch = 1;
  options.batch_is_default = true;
  EXPECT_EQ(load_onnx(fixture("fixed_batch.onnx"), options).batch, 8);
  options.batch = 2;
  options.batch_is_default = false;
  EXPECT_THROW(load_onnx(fixture("fixed_batch.onnx"), options), InputError);
  // A batch the file fixes is not taken in place of --batch's default: the message says which to give.
  options.input_shapes.clear();
  options.batch = 1;
  options.batch_is_default = true;
  try {
    load_onnx(fixture("fixed_batch4.onnx"), options);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("fixed batch of 4 in the file, not 1; give --batch 4"), std::string::npos)
        << e.what();
  }
  options.batch = 4;
  options.batch_is_default = false;
  EXPECT_EQ(load_onnx(fixture("fixed_batch4.onnx"), options).batch, 4);
  // A table of batch 1 broadcast over the samples: its shape, given whole, says nothing of the batch.
  EXPECT_THROW(load_onnx(fixture("broadcast_table.onnx"), options), InputError);
  options.input_shapes = {parse_input_shape("pos=1x16x8")};
  const auto table = load_onnx(fixture("broadcast_table.onnx"), options);
  EXPECT_EQ(table.batch, 4);
  EXPECT_EQ(dims(find_op(table.model.forward, "add_pos").output.shape), (std::vector<std::int64_t>{4, 16, 8}));
  options.input_shapes.clear();
  // A graph whose batch is dynamic takes --batch.
  options.batch = 6;
  EXPECT_EQ(load_onnx(fixture("tiny_cnn.onnx"), options).batch, 6);
}

TEST(OnnxImport, MalformedFilesAreOneLineInputErrors) {
  for (const char* name : {"truncated.onnx", "not_onnx.onnx", "empty.onnx", "no_graph.onnx", "dangling.onnx",
                           "does_not_exist.onnx"}) {
    try {
      load_onnx(fixture(name), batch_and_seq(1, 8));
      ADD_FAILURE() << name << ": expected InputError";
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(name), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

// Every prefix and many corrupted copies of a real model either load or give an InputError:
// nothing else escapes, nothing crashes.
TEST(OnnxImport, TruncatedAndCorruptedBytesNeverEscapeAsOtherErrors) {
  std::ifstream file(fixture("tiny_transformer.onnx"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1000u);
  const OnnxOptions options = batch_and_seq(2, 4);
  auto attempt = [&](const std::string& data) {
    try {
      onnx_from_bytes(data, "mem.onnx", options);
    } catch (const InputError&) {
    }
  };
  for (std::size_t n = 0; n < bytes.size(); n += 97) EXPECT_NO_THROW(attempt(bytes.substr(0, n)));
  std::uint32_t state = 12345;
  for (int i = 0; i < 200; ++i) {
    std::string data = bytes;
    for (int flips = 0; flips < 4; ++flips) {
      state = state * 1664525u + 1013904223u;
      data[state % data.size()] = static_cast<char>(state >> 24);
    }
    EXPECT_NO_THROW(attempt(data));
  }
}

TEST(OnnxImport, BytesThatAreNotAModel) {
  EXPECT_THROW(onnx_from_bytes(std::string("\x08\x07\x12\x03", 4), "mem.onnx"), InputError);
  EXPECT_THROW(onnx_from_bytes(std::string(64, '\xff'), "mem.onnx"), InputError);
}

TEST(OnnxImport, ParsesInputShapes) {
  const auto s = parse_input_shape("input_ids=8x128");
  EXPECT_EQ(s.name, "input_ids");
  EXPECT_EQ(s.dims, (std::vector<std::int64_t>{8, 128}));
  EXPECT_EQ(parse_input_shape("x:1,3,224,224").dims.size(), 4u);
  for (const char* bad : {"x", "=1x2", "x=", "x=1xx2", "x=0x3", "x=-1", "x=1x3.5"}) {
    EXPECT_THROW(parse_input_shape(bad), InputError) << bad;
  }
  EXPECT_TRUE(is_onnx_path("models/ResNet.ONNX"));
  EXPECT_FALSE(is_onnx_path("models/resnet50.json"));
}

}  // namespace
}  // namespace truepeak::estimate
