// The memory model against worked examples.
#include "estimate/memory.hpp"

#include <gtest/gtest.h>

#include "helpers.hpp"

namespace truepeak::estimate {
namespace {

using testing::batch;
using testing::linear_model;
using testing::relu_model;

constexpr double kParams = 1024.0 * 1024.0;

Options training(DType dtype, Optimizer opt) {
  Options o = batch(1, dtype);
  o.mode = Mode::training;
  o.optimizer = opt;
  return o;
}

double state_per_param(DType dtype, Optimizer opt) {
  const auto m = estimate_memory(linear_model(1024, 1024), training(dtype, opt), std::nullopt);
  return (m.weights_bytes + m.master_weights_bytes + m.gradients_bytes + m.optimizer_bytes) /
         kParams;
}

TEST(Memory, AdamMixedPrecisionIs16BytesPerParameter) {
  // bf16 weights 2 + bf16 gradients 2 + fp32 master 4 + fp32 Adam m and v 8.
  EXPECT_DOUBLE_EQ(state_per_param(DType::bf16, Optimizer::adam), 16);
  EXPECT_DOUBLE_EQ(state_per_param(DType::f16, Optimizer::adamw), 16);
  // fp32: weights 4 + gradients 4 + m and v 8.
  EXPECT_DOUBLE_EQ(state_per_param(DType::f32, Optimizer::adam), 16);
  EXPECT_DOUBLE_EQ(state_per_param(DType::f32, Optimizer::sgd), 8);
  EXPECT_DOUBLE_EQ(state_per_param(DType::f32, Optimizer::momentum), 12);
  EXPECT_DOUBLE_EQ(state_per_param(DType::bf16, Optimizer::sgd), 8);  // 2 + 2 + master 4
}

TEST(Memory, TrainingKeepsTheInputsBackwardNeeds) {
  // One linear: backward keeps x [N, 1024]; the gradient working set is dY + dX.
  const auto m =
      estimate_memory(linear_model(1024, 1024), training(DType::f32, Optimizer::sgd), std::nullopt);
  EXPECT_DOUBLE_EQ(m.activations_bytes, (1024 + (1024 + 1024)) * 4.0);
  EXPECT_DOUBLE_EQ(m.total_bytes, 8 * kParams + m.activations_bytes);
}

TEST(Memory, InferencePeakLiveSetFollowsLiveness) {
  // x -> relu1 -> relu2: x dies after relu1, so at most two [N, 1000] tensors live at once.
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), 1000});
  const auto& r1 = b.add(make_elementwise("r1", "relu", {x}));
  b.add(make_elementwise("r2", "relu", {r1}));
  EXPECT_DOUBLE_EQ(peak_live_bytes(b.graph(), {{"N", 3}}, 4), 2 * 3 * 1000 * 4.0);
  // A residual keeps x alive across the branch: x, r1 and the sum.
  GraphBuilder c;
  const auto& y = c.input("x", {Dim::symbol("N"), 1000});
  const auto& s1 = c.add(make_elementwise("r1", "relu", {y}));
  c.add(make_elementwise("add", "add", {y, s1}));
  EXPECT_DOUBLE_EQ(peak_live_bytes(c.graph(), {{"N", 1}}, 4), 3 * 1000 * 4.0);
}

TEST(Memory, KvCacheOfLlama2At4kTokensIs2GiBInF16) {
  // 2 (k, v) x 32 layers x 4096 (32 heads x 128) x 4096 positions x 2 bytes.
  Options o = batch(1, DType::f16);
  o.seq = 4096;
  const auto m = estimate_memory(load_model("llama2_7b"), o, std::nullopt);
  EXPECT_DOUBLE_EQ(m.kv_cache_bytes, 2.0 * 32 * 4096 * 4096 * 2);
  EXPECT_NEAR(m.weights_bytes, 6.74e9 * 2, 0.01e9 * 2);
}

TEST(Memory, FitsKeepTwentyPercentHeadroomAndFindTheLargestBatch) {
  // relu over [N, 1e6] in f32: x and y live together, 8e6 bytes per sample; 10 GB -> 8 GB usable.
  const Model m = relu_model(1000000);
  const auto at1000 = estimate_memory(m, batch(1000), 10e9);
  EXPECT_DOUBLE_EQ(at1000.total_bytes, 8e9);
  EXPECT_DOUBLE_EQ(at1000.usable_bytes, 8e9);
  EXPECT_TRUE(at1000.fits);
  EXPECT_FALSE(estimate_memory(m, batch(1001), 10e9).fits);
  EXPECT_EQ(max_batch(m, batch(1), 10e9), 1000);
  EXPECT_EQ(max_batch(m, batch(1), 1e6), 0);
  EXPECT_FALSE(max_batch(m, batch(1), std::nullopt).has_value());
}

TEST(Memory, CpuDevicesFitAgainstTheMachineMemory) {
  const Profile p = testing::fixture("fixture_cpu.json");
  EXPECT_EQ(device_memory_bytes(p, p.devices.at(0)), 16e9);
}

}  // namespace
}  // namespace truepeak::estimate
