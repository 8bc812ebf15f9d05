// Shape code and data-dependent sizes in ONNX graphs: the patterns of the torchvision exports,
// one small graph each (scripts/make_onnx_fixtures.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "estimate/graph.hpp"
#include "estimate/onnx_import.hpp"

namespace truepeak::estimate {
namespace {

using Dims = std::vector<std::int64_t>;

std::string fixture(const std::string& name) {
  return std::string(TRUEPEAK_SOURCE_DIR) + "/tests/estimate/data/onnx/" + name;
}

const Op* find_op(const Graph& graph, const std::string& name) {
  const auto it = std::find_if(graph.ops.begin(), graph.ops.end(),
                               [&](const Op& op) { return op.name == name; });
  return it == graph.ops.end() ? nullptr : &*it;
}

Dims dims_of(const Graph& graph, const std::string& name) {
  const Op* op = find_op(graph, name);
  if (!op) {
    ADD_FAILURE() << "no op named " << name;
    return {};
  }
  return eval_shape(op->output.shape, {});
}

OnnxOptions with_batch(std::int64_t batch) {
  OnnxOptions options;
  options.batch = batch;
  return options;
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

const OnnxAssumption* assumption(const OnnxImport& result, const std::string& op_type) {
  const auto it = std::find_if(result.assumptions.begin(), result.assumptions.end(),
                               [&](const OnnxAssumption& a) { return a.op_type == op_type; });
  return it == result.assumptions.end() ? nullptr : &*it;
}

TEST(OnnxShapeEval, AReshapeTargetComputedInTheGraphFolds) {
  // Swin's window partition: pads from Mod of a Shape, windows by PyTorch's floor division
  // (Div, Less, Xor, Equal, Not, And, Where), heads through float arithmetic.
  const auto result = load_onnx(fixture("computed_reshape.onnx"), with_batch(2));
  const auto& graph = result.model.forward;
  EXPECT_EQ(dims_of(graph, "pad"), (Dims{2, 8, 8, 4}));
  EXPECT_EQ(dims_of(graph, "windows_reshape"), (Dims{8, 16, 4}));
  const Op* qkv = find_op(graph, "qkv");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->kind, OpKind::linear);
  EXPECT_EQ(dims_of(graph, "qkv"), (Dims{8, 16, 12}));
  EXPECT_EQ(dims_of(graph, "qkv_transpose"), (Dims{3, 8, 2, 16, 2}));
  EXPECT_TRUE(result.assumptions.empty());
  EXPECT_FALSE(mentions(result.warnings, "unknown")) << result.warnings.size();
  // The shape code itself costs nothing.
  EXPECT_EQ(find_op(graph, "nh/where"), nullptr);
  EXPECT_EQ(find_op(graph, "heads_f"), nullptr);
}

TEST(OnnxShapeEval, AResizeToASizeComputedInFloatFolds) {
  // A detector's transform: scale = min(64 / 30, 100 / 40) in float32, sizes floor(side x scale),
  // then padded to a multiple of 32 through Ceil.
  const auto result = load_onnx(fixture("computed_resize.onnx"), with_batch(1));
  const auto& graph = result.model.forward;
  EXPECT_EQ(dims_of(graph, "resize"), (Dims{1, 3, 64, 85}));
  EXPECT_EQ(dims_of(graph, "pad"), (Dims{1, 3, 64, 96}));
  const Op* conv = find_op(graph, "conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->kind, OpKind::conv2d);
  EXPECT_EQ(dims_of(graph, "conv"), (Dims{1, 8, 64, 96}));
  EXPECT_TRUE(result.assumptions.empty());
}

TEST(OnnxShapeEval, DataDependentSizesAreAssumedAndNamed) {
  const auto result = load_onnx(fixture("data_dependent.onnx"), with_batch(1));
  const auto& graph = result.model.forward;
  // NonZero over 500 scores and NonMaxSuppression over 500 boxes: 100 each, at most 500.
  const auto* nonzero = assumption(result, "NonZero");
  ASSERT_NE(nonzero, nullptr);
  EXPECT_EQ(nonzero->node, "nonzero");
  EXPECT_EQ(nonzero->assumed, kDataDependentSize);
  EXPECT_EQ(nonzero->at_most, 500);
  const auto* nms = assumption(result, "NonMaxSuppression");
  ASSERT_NE(nms, nullptr);
  EXPECT_EQ(nms->what, "boxes kept");
  EXPECT_EQ(nms->at_most, 500);
  EXPECT_NE(
      nms->text.find(
          "NonMaxSuppression 'nms': the number of boxes kept depends on the data (at most 500); "
          "assumed 100"),
      std::string::npos)
      << nms->text;
  EXPECT_TRUE(mentions(result.warnings, nms->text));
  // Everything after them has static shapes: the linear layers over the boxes found and kept, a
  // TopK whose k = min(1000, boxes found) folds once the boxes found are assumed.
  EXPECT_EQ(dims_of(graph, "box_linear"), (Dims{100, 16}));
  EXPECT_EQ(dims_of(graph, "kept_linear"), (Dims{100, 16}));
  EXPECT_EQ(dims_of(graph, "topk"), (Dims{100}));
  EXPECT_EQ(assumption(result, "TopK"), nullptr);
  // An If on the data takes its larger branch, which is then costed.
  const auto* branch = assumption(result, "If");
  ASSERT_NE(branch, nullptr);
  EXPECT_EQ(branch->what, "branch");
  EXPECT_EQ(branch->assumed, 1);
  EXPECT_EQ(dims_of(graph, "if_data/then/sigmoid"), (Dims{100, 16}));
  EXPECT_EQ(find_op(graph, "if_data/else/tanh"), nullptr);
  EXPECT_EQ(result.assumptions.size(), 3u);

  // The size is the user's to set, capped by what the op's inputs allow.
  auto options = with_batch(1);
  options.data_dependent_size = 7;
  const auto seven = load_onnx(fixture("data_dependent.onnx"), options);
  EXPECT_EQ(dims_of(seven.model.forward, "box_linear"), (Dims{7, 16}));
  EXPECT_EQ(dims_of(seven.model.forward, "topk"), (Dims{7}));
  options.data_dependent_size = 100000;
  const auto capped = load_onnx(fixture("data_dependent.onnx"), options);
  EXPECT_EQ(dims_of(capped.model.forward, "box_linear"), (Dims{500, 16}));
  EXPECT_EQ(assumption(capped, "NonZero")->assumed, 500);
  options.data_dependent_size = 0;
  EXPECT_THROW(load_onnx(fixture("data_dependent.onnx"), options), InputError);
}

TEST(OnnxShapeEval, AnIfOnAKnownConditionIsItsBranch) {
  const auto result = load_onnx(fixture("if_constant.onnx"), with_batch(3));
  const auto& graph = result.model.forward;
  const Op* linear = find_op(graph, "if_nonempty/then/linear16");
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(linear->kind, OpKind::linear);
  EXPECT_EQ(dims_of(graph, "if_nonempty/then/linear16"), (Dims{3, 16}));
  EXPECT_EQ(dims_of(graph, "after"), (Dims{3, 16}));
  EXPECT_EQ(find_op(graph, "if_nonempty/else/linear4"), nullptr);
  EXPECT_TRUE(result.unknown_ops.empty());
  EXPECT_TRUE(result.assumptions.empty());
  EXPECT_EQ(result.onnx_nodes, 4);
}

TEST(OnnxShapeEval, ALoopWithAKnownTripCountIsUnrolled) {
  const auto result = load_onnx(fixture("loop_constant.onnx"), with_batch(2));
  const auto& graph = result.model.forward;
  for (const char* name : {"loop/iter0/linear", "loop/iter1/linear", "loop/iter2/linear"}) {
    const Op* op = find_op(graph, name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->kind, OpKind::linear);
    EXPECT_EQ(dims_of(graph, name), (Dims{2, 8}));
  }
  EXPECT_EQ(find_op(graph, "loop/iter3/linear"), nullptr);
  EXPECT_EQ(dims_of(graph, "after"), (Dims{2, 8}));
  // The scan output stacks the three iterations' states.
  EXPECT_EQ(dims_of(graph, "loop/scan_0"), (Dims{3, 2, 8}));
  EXPECT_TRUE(result.unknown_ops.empty());
  EXPECT_TRUE(result.assumptions.empty());
}

TEST(OnnxShapeEval, ALoopWhoseTripCountComesFromDataRunsTheAssumedCount) {
  auto options = with_batch(1);
  options.data_dependent_size = 7;
  const auto result = load_onnx(fixture("loop_on_data.onnx"), options);
  const auto& graph = result.model.forward;
  const auto* loop = assumption(result, "Loop");
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->what, "trip count");
  EXPECT_EQ(loop->assumed, 7);
  EXPECT_NE(loop->text.find("assumed 7 iterations"), std::string::npos) << loop->text;
  EXPECT_NE(find_op(graph, "loop/iter6/linear"), nullptr);
  EXPECT_EQ(find_op(graph, "loop/iter7/linear"), nullptr);
  EXPECT_EQ(dims_of(graph, "after"), (Dims{1, 8}));
  EXPECT_TRUE(result.unknown_ops.empty());
}

TEST(OnnxShapeEval, ARefusalNamesTheFirstOpWithoutAShape) {
  try {
    load_onnx(fixture("unevaluated_shape.onnx"), with_batch(1));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(
                  "the first op whose output shape could not be evaluated is 'reshape' (Reshape)"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("'x' [1,6]"), std::string::npos) << message;
    EXPECT_NE(message.find("--input-shape"), std::string::npos) << message;
    EXPECT_NE(message.find("--data-dependent-size"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// Corrupted copies of the graphs with shape code, control flow and data-dependent sizes either
// load or give an InputError: nothing else escapes, nothing crashes.
TEST(OnnxShapeEval, CorruptedShapeCodeNeverEscapesAsOtherErrors) {
  for (const char* name : {"computed_reshape.onnx", "computed_resize.onnx", "data_dependent.onnx",
                           "if_constant.onnx", "loop_constant.onnx", "loop_on_data.onnx"}) {
    std::ifstream file(fixture(name), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 200u) << name;
    std::uint32_t state = 2024;
    for (int i = 0; i < 150; ++i) {
      std::string data = bytes;
      for (int flips = 0; flips < 3; ++flips) {
        state = state * 1664525u + 1013904223u;
        data[state % data.size()] = static_cast<char>(state >> 24);
      }
      EXPECT_NO_THROW({
        try {
          onnx_from_bytes(data, name, with_batch(2));
        } catch (const InputError&) {
        }
      }) << name
         << " copy " << i;
    }
  }
}

}  // namespace
}  // namespace truepeak::estimate
