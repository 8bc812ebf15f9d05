// The graph API's description of a convolution and the engines a measurement may use: host only.
#include "kernels/cuda/conv_layout.hpp"

#include <gtest/gtest.h>

#include <set>

namespace truepeak::cuda_detail {
namespace {

std::int64_t offset(const GraphTensor& t, std::int64_t a, std::int64_t b, std::int64_t c,
                    std::int64_t d) {
  return a * t.strides[0] + b * t.strides[1] + c * t.strides[2] + d * t.strides[3];
}

// Every element of the tensor lands on its own offset inside the packed buffer.
void expect_packed(const GraphTensor& t) {
  std::set<std::int64_t> offsets;
  for (std::int64_t a = 0; a < t.dims[0]; ++a)
    for (std::int64_t b = 0; b < t.dims[1]; ++b)
      for (std::int64_t c = 0; c < t.dims[2]; ++c)
        for (std::int64_t d = 0; d < t.dims[3]; ++d) {
          const std::int64_t at = offset(t, a, b, c, d);
          EXPECT_GE(at, 0);
          EXPECT_LT(at, t.elements());
          offsets.insert(at);
        }
  EXPECT_EQ(static_cast<std::int64_t>(offsets.size()), t.elements());
}

TEST(ConvLayout, ChannelsLastOffsetsAreNhwcAndKrsc) {
  // 2 images of 5 channels, 7x6, stride 2, pad 1: output 4x3.
  const ConvShape shape{DType::bf16, 2, 5, 7, 6, 8, 3, 3, 2, 1, 1, 1};
  const ConvGraphTensors t = conv_graph_tensors(shape, true);
  EXPECT_EQ(t.x.dims, (std::array<std::int64_t, 4>{2, 5, 7, 6}));
  EXPECT_EQ(t.w.dims, (std::array<std::int64_t, 4>{8, 5, 3, 3}));
  EXPECT_EQ(t.y.dims, (std::array<std::int64_t, 4>{2, 8, 4, 3}));
  // x[n][c][h][w] sits at ((n * H + h) * W + w) * C + c.
  EXPECT_EQ(offset(t.x, 1, 3, 4, 2), ((1 * 7 + 4) * 6 + 2) * 5 + 3);
  // w[k][c][r][s] sits at ((k * R + r) * S + s) * C + c.
  EXPECT_EQ(offset(t.w, 6, 2, 1, 2), ((6 * 3 + 1) * 3 + 2) * 5 + 2);
  EXPECT_EQ(offset(t.y, 1, 7, 3, 2), ((1 * 4 + 3) * 3 + 2) * 8 + 7);
  for (const GraphTensor* g : {&t.x, &t.w, &t.y}) expect_packed(*g);
}

TEST(ConvLayout, ChannelsFirstOffsetsAreNchwAndKcrs) {
  const ConvShape shape{DType::f32, 3, 4, 5, 6, 2, 1, 1, 1, 0, 1, 1};
  const ConvGraphTensors t = conv_graph_tensors(shape, false);
  EXPECT_EQ(offset(t.x, 2, 3, 4, 5), ((2 * 4 + 3) * 5 + 4) * 6 + 5);
  EXPECT_EQ(offset(t.w, 1, 3, 0, 0), 1 * 4 + 3);
  EXPECT_EQ(t.y.dims, (std::array<std::int64_t, 4>{3, 2, 5, 6}));
  for (const GraphTensor* g : {&t.x, &t.w, &t.y}) expect_packed(*g);
}

TEST(ConvLayout, GroupsShowOnlyInTheFiltersChannelCount) {
  // Depthwise (groups = C) and a grouped layer: the filter holds C / groups channels per output.
  const ConvShape depthwise{DType::f16, 1, 32, 10, 10, 32, 3, 3, 1, 1, 1, 32};
  EXPECT_EQ(conv_graph_tensors(depthwise, true).w.dims, (std::array<std::int64_t, 4>{32, 1, 3, 3}));
  const ConvShape grouped{DType::f16, 1, 64, 10, 10, 128, 3, 3, 1, 1, 1, 4};
  const ConvGraphTensors t = conv_graph_tensors(grouped, true);
  EXPECT_EQ(t.w.dims, (std::array<std::int64_t, 4>{128, 16, 3, 3}));
  EXPECT_EQ(t.x.dims[1] / t.w.dims[1], 4);
  expect_packed(t.w);
}

TEST(ConvLayout, F32IsMeasuredWithoutTf32Engines) {
  EngineNotes tensor_core;
  tensor_core.tensor_core = true;
  EngineNotes down_converts;
  down_converts.down_converts = true;
  EngineNotes plain;
  EXPECT_TRUE(engine_excluded(DType::f32, tensor_core).has_value());
  EXPECT_TRUE(engine_excluded(DType::f32, down_converts).has_value());
  EXPECT_FALSE(engine_excluded(DType::f32, plain).has_value());
  for (const DType dtype : {DType::f16, DType::bf16}) {
    EXPECT_FALSE(engine_excluded(dtype, tensor_core).has_value()) << to_string(dtype);
    EXPECT_FALSE(engine_excluded(dtype, plain).has_value()) << to_string(dtype);
  }
}

TEST(ConvLayout, RuntimeCompiledEnginesAreNotExcludedByDtype) {
  EngineNotes compiled;
  compiled.runtime_compiled = true;
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16})
    EXPECT_FALSE(engine_excluded(dtype, compiled).has_value()) << to_string(dtype);
}

TEST(ConvLayout, CompileBudgetAllowsOneALayerUntilItIsSpent) {
  CompileBudget budget(2);
  EXPECT_FALSE(budget.refuse(0).has_value());
  EXPECT_EQ(budget.refuse(1), "compiled at run time (one a layer)");
  budget.spend();
  EXPECT_FALSE(budget.refuse(0).has_value());  // one left: the next layer may still compile
  budget.spend();
  EXPECT_EQ(budget.left(), 0);
  EXPECT_EQ(budget.refuse(0), "compiled at run time (the calibration's budget is spent)");
  EXPECT_EQ(budget.refuse(2), "compiled at run time (one a layer)");
}

TEST(ConvLayout, EngineChoiceKeepsModeAsPlansAndTriesTheFallbacksOthers) {
  CompileBudget budget(10);
  EngineChoice choice(DType::bf16, budget);
  const EngineNotes plain;
  // Mode A gives engines 62 and 58 plans; 45's plan fails to build, so it never counts as planned.
  for (const std::int64_t engine : {62, 58, 45}) {
    EXPECT_FALSE(choice.already_planned(false, engine));
    EXPECT_FALSE(choice.refused(plain).has_value());
    choice.trying(plain);
    if (engine != 45) choice.planned(false, engine);
  }
  EXPECT_TRUE(choice.already_planned(true, 62));
  EXPECT_TRUE(choice.already_planned(true, 58));
  EXPECT_FALSE(choice.already_planned(true, 45));  // the fallback list's config of it is tried
  EXPECT_FALSE(choice.already_planned(true, 7));
  EXPECT_FALSE(choice.already_planned(false, 62));  // within mode A, other knobs of an engine
  EXPECT_EQ(budget.left(), 10);                     // no runtime compilation so far
}

TEST(ConvLayout, EngineChoiceTriesOneCompiledPlanALayerAndSpendsTheBudgetOnTheTry) {
  CompileBudget budget(2);
  EngineNotes compiled;
  compiled.runtime_compiled = true;
  {
    EngineChoice layer(DType::f16, budget);
    EXPECT_FALSE(layer.refused(compiled).has_value());
    layer.trying(compiled);  // its build fails: the try is spent all the same
    EXPECT_EQ(layer.refused(compiled), "compiled at run time (one a layer)");
    EXPECT_FALSE(layer.refused(EngineNotes{}).has_value());
  }
  {
    EngineChoice layer(DType::f16, budget);
    layer.trying(compiled);
  }
  EngineChoice last(DType::f16, budget);
  EXPECT_EQ(last.refused(compiled), "compiled at run time (the calibration's budget is spent)");
  // f32's exclusion comes first: a TF32 engine is refused for that, compiled or not.
  EngineNotes tf32;
  tf32.tensor_core = true;
  tf32.runtime_compiled = true;
  EngineChoice f32(DType::f32, budget);
  EXPECT_EQ(f32.refused(tf32), engine_excluded(DType::f32, tf32));
}

}  // namespace
}  // namespace truepeak::cuda_detail
