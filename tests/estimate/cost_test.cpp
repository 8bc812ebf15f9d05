// The cost model on hand-made profiles with known answers (tests/estimate/data/fixture_*.json).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "estimate/cost.hpp"
#include "estimate/rates.hpp"
#include "helpers.hpp"

namespace truepeak::estimate {
namespace {

using testing::batch;
using testing::fixture;
using testing::linear_model;
using testing::relu_model;
using testing::two_linears;

constexpr double kOverhead = 1e-6;  // fixture overhead.op_s

// One gelu over N x 65536 elements.
Model gelu_model() {
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), 65536});
  b.add(make_elementwise("gelu", "gelu", {x}));
  Model m;
  m.name = "gelu";
  m.forward = b.take();
  return m;
}

class FixtureCpu : public ::testing::Test {
 protected:
  Profile profile = fixture("fixture_cpu.json");
  const Device& cpu = profile.devices.at(0);
};

TEST_F(FixtureCpu, ComputeBoundGemmRunsAtTheMeasuredRate) {
  // 1024^3: exactly the measured point (8e11 FLOP/s). 12.6 MB moved, at 5e10 B/s since the 4 MiB
  // output outgrows the 1 MiB L2 and is written twice (line read, then written back): 0.34 ms
  // < 2.7 ms.
  const auto est = estimate(linear_model(1024, 1024), cpu, batch(1024));
  ASSERT_EQ(est.ops.size(), 1u);
  const auto& r = est.ops[0];
  const double flops = 2.0 * 1024 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(r.flops, flops);
  EXPECT_DOUBLE_EQ(r.bytes, 3.0 * 1024 * 1024 * 4);
  EXPECT_TRUE(r.compute_bound);
  EXPECT_NEAR(r.compute_s, flops / 8e11, 1e-12);
  EXPECT_NEAR(r.memory_s, (r.bytes + 1024.0 * 1024 * 4) / 5e10, 1e-12);
  EXPECT_NEAR(r.time_s, flops / 8e11 + kOverhead, 1e-12);
  // Naive: datasheet 1e12 FLOP/s and 1e11 B/s, no overhead.
  EXPECT_NEAR(r.naive_s, flops / 1e12, 1e-12);
  EXPECT_NEAR(est.latency_s, r.time_s, 1e-15);
  EXPECT_NEAR(est.throughput_per_s, 1024 / r.time_s, 1e-6);
}

TEST_F(FixtureCpu, ATransposeThatMovesTheInnermostAxisTakesItsOwnRate) {
  // x [N, 128, 12, 64]: the heads split apart (rows of 64 move whole) and a key laid out
  // [12, 64, 128] (each output row gathers elements 768 apart).
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), 128, 12, 64});
  b.add(make_transpose("heads", x, {0, 2, 1, 3}));
  b.add(make_transpose("key", x, {0, 2, 3, 1}));
  Model m;
  m.name = "transposes";
  m.forward = b.take();
  EXPECT_EQ(m.forward.ops.at(0).fn, "");
  EXPECT_EQ(m.forward.ops.at(1).fn, "inner");
  Options o = batch(1);
  o.own_rates = {{"transpose", 4e10}};
  const auto one_rate = estimate(m, cpu, o);
  EXPECT_EQ(one_rate.ops.at(1).kind, "transpose:inner");
  EXPECT_DOUBLE_EQ(one_rate.ops.at(1).compute_s, one_rate.ops.at(0).compute_s);  // the kind's rate serves both
  o.own_rates.push_back({"transpose:inner", 5e9});
  const auto two_rates = estimate(m, cpu, o);
  const double elements = 128.0 * 12 * 64;
  EXPECT_NEAR(two_rates.ops.at(0).compute_s, elements / 4e10, 1e-15);
  EXPECT_NEAR(two_rates.ops.at(1).compute_s, elements / 5e9, 1e-15);
}

TEST_F(FixtureCpu, MemoryBoundOpRunsAtTheBandwidthOfItsLevel) {
  // 16 Mi elements read and written: 128 MiB, far beyond the 1 MiB L2 -> DRAM at 5e10 B/s. A
  // ReLU may write in place: its output counts once.
  const auto big = estimate(relu_model(1 << 22), cpu, batch(4));
  const auto& r = big.ops.at(0);
  EXPECT_FALSE(r.compute_bound);
  EXPECT_DOUBLE_EQ(r.bytes, 2.0 * (1 << 24) * 4);
  EXPECT_NEAR(r.time_s, r.bytes / 5e10 + kOverhead, 1e-12);
  EXPECT_NEAR(r.naive_s, r.bytes / 1e11, 1e-12);
  EXPECT_NEAR(r.peak_fraction, (r.bytes / r.time_s) / 5e10, 1e-9);
  // 512 KiB fits the 1 MiB L2: 2e11 B/s.
  const auto small = estimate(relu_model(1 << 16), cpu, batch(1));
  EXPECT_NEAR(small.ops.at(0).memory_s, 524288 / 2e11, 1e-15);
  EXPECT_NEAR(small.ops.at(0).peak_fraction, (524288 / small.ops.at(0).time_s) / 2e11, 1e-9);
  EXPECT_LT(small.ops.at(0).peak_fraction, 1.0);
}

TEST_F(FixtureCpu, MeasuredVectorOpsTakeTheirElementRate) {
  // 64 Ki elements of gelu: 512 KiB moved in the 1 MiB L2 at 2e11 B/s is 2.6 us; at a measured
  // 1e9 elements/s the op takes 65.5 us.
  const Model m = gelu_model();
  const auto plain = estimate(m, cpu, batch(1));
  const RateModel rates(cpu, DType::f32);
  EXPECT_NEAR(plain.ops.at(0).compute_s, 8.0 * 65536 / rates.vector_flops_per_s(), 1e-15);

  Device measured = cpu;
  measured.vector_ops.push_back(testing::vector_op_point("gelu", DType::f32, 1e9));
  // Another dtype's point does not count.
  measured.vector_ops.push_back(testing::vector_op_point("gelu", DType::bf16, 1e6));
  const auto r = estimate(m, measured, batch(1)).ops.at(0);
  EXPECT_NEAR(r.compute_s, 65536 / 1e9, 1e-15);
  EXPECT_TRUE(r.compute_bound);
  EXPECT_NEAR(r.time_s, 65536 / 1e9 + kOverhead, 1e-15);
  EXPECT_NEAR(r.memory_s, 524288 / 2e11, 1e-15);

  // GELU's tanh form takes its own measured rate; a profile without one (before 1.5) lends it
  // the erf form's.
  Model t = m;
  GraphBuilder tb;
  const auto& tx = tb.input("x", {Dim::symbol("N"), 65536});
  tb.add(make_elementwise("gelu_tanh", "gelu_tanh", {tx}));
  t.forward = tb.take();
  EXPECT_NEAR(estimate(t, measured, batch(1)).ops.at(0).compute_s, 65536 / 1e9, 1e-15);
  VectorOpPoint tanh_form = measured.vector_ops.front();
  tanh_form.op = "gelu_tanh";
  tanh_form.elements_per_s = 4e9;
  measured.vector_ops.push_back(tanh_form);
  EXPECT_NEAR(estimate(t, measured, batch(1)).ops.at(0).compute_s, 65536 / 4e9, 1e-15);
  EXPECT_NEAR(estimate(m, measured, batch(1)).ops.at(0).compute_s, 65536 / 1e9, 1e-15);
}

TEST(VectorOps, OpsMapToTheMeasuredOpThatTimesThem) {
  const TensorRef x{"x", {8, 768}};
  EXPECT_EQ(measured_vector_op(make_elementwise("a", "clip", {x})), "relu6");
  EXPECT_EQ(measured_vector_op(make_elementwise("a", "gelu", {x})), "gelu");
  EXPECT_EQ(measured_vector_op(make_elementwise("a", "gelu_tanh", {x})), "gelu_tanh");
  // A residual add is oneDNN's sum; a broadcast add or one with a parameter is another kernel.
  EXPECT_EQ(measured_vector_op(make_elementwise("a", "add", {x, x})), "add");
  EXPECT_EQ(measured_vector_op(make_elementwise("a", "add", {x, TensorRef{"b", {1, 768}}})), "");
  EXPECT_EQ(measured_vector_op(make_elementwise("a", "add", {x, x}, {{"bias", {8, 768}}})), "");
  EXPECT_EQ(measured_vector_op(make_elementwise("a", "mul", {x, x})), "");
  EXPECT_EQ(measured_vector_op(make_softmax("a", x)), "softmax");
  EXPECT_EQ(measured_vector_op(make_norm("a", "layernorm", x)), "layernorm");
  EXPECT_EQ(measured_vector_op(make_norm("a", "batchnorm", x)), "");
}

// An f32 point of `op` over rows x cols elements at `rate` elements/s.
VectorOpPoint sized_point(const std::string& op, double rate, std::int64_t rows, std::int64_t cols) {
  VectorOpPoint v = testing::vector_op_point(op, DType::f32, rate);
  v.rows = rows;
  v.cols = cols;
  v.timing.time_s = v.timing.median_s = static_cast<double>(rows * cols) / rate;
  return v;
}

TEST_F(FixtureCpu, ALayoutChangePastTheCachesTakesTheRateMeasuredPastThem) {
  // The fixture's caches keep 1 MiB (L2). A reorder measured over 128 KiB (two 64 KiB tensors)
  // at 8e9 elements/s and over 64 MiB at 3e9, a relu over 128 KiB alone.
  Device measured = cpu;
  const auto past = sized_point("reorder_plain", 3e9, 256, 32768);
  measured.vector_ops = {past, sized_point("reorder_plain", 8e9, 16, 1024), sized_point("relu", 9e9, 16, 1024)};
  const RateModel rates(measured, DType::f32);
  EXPECT_DOUBLE_EQ(*rates.vector_op_elements_per_s("reorder_plain", 64.0 * 1024), 8e9);
  EXPECT_DOUBLE_EQ(*rates.vector_op_elements_per_s("reorder_plain", 1024.0 * 1024), 8e9);
  EXPECT_DOUBLE_EQ(*rates.vector_op_elements_per_s("reorder_plain", 2.0 * 1024 * 1024), 3e9);
  EXPECT_DOUBLE_EQ(*rates.vector_op_elements_per_s("reorder_plain", 1e9), 3e9);
  // An op measured only in the caches keeps that rate at every size.
  EXPECT_DOUBLE_EQ(*rates.vector_op_elements_per_s("relu", 1e9), 9e9);
  // A second point past the caches: the one nearer in size serves.
  measured.vector_ops.push_back(sized_point("reorder_plain", 2e9, 256, 4 * 32768));
  const RateModel two(measured, DType::f32);
  EXPECT_DOUBLE_EQ(*two.vector_op_elements_per_s("reorder_plain", 80.0 * 1024 * 1024), 3e9);
  EXPECT_DOUBLE_EQ(*two.vector_op_elements_per_s("reorder_plain", 200.0 * 1024 * 1024), 2e9);
  // Only points past the caches: those serve every size.
  measured.vector_ops = {past};
  EXPECT_DOUBLE_EQ(*RateModel(measured, DType::f32).vector_op_elements_per_s("reorder_plain", 1024), 3e9);
}

TEST_F(FixtureCpu, AnOpsRowTakesTheRateOfItsOwnWorkingSet) {
  // A gelu over N x 65536 elements moves N x 512 KiB: inside the fixture's 1 MiB cache at batch
  // 1, past it at batch 8, where the gelu measured past the caches (2e9 against 4e9) serves.
  Device measured = cpu;
  measured.vector_ops = {sized_point("gelu", 4e9, 16, 1024), sized_point("gelu", 2e9, 256, 32768)};
  const Model m = gelu_model();
  EXPECT_NEAR(estimate(m, measured, batch(1)).ops.at(0).compute_s, 65536 / 4e9, 1e-15);
  EXPECT_NEAR(estimate(m, measured, batch(8)).ops.at(0).compute_s, 8 * 65536 / 2e9, 1e-15);
}

TEST_F(FixtureCpu, TypicalTimesReplaceTheFastestSamplesWhereAsked) {
  // The 1024^3 point's quietest look had a median 10% over its fastest sample: a product of that
  // shape takes the fastest sample, and the median with --typical-times (Options::typical_times).
  const double flops = 2.0 * 1024 * 1024 * 1024;
  Device typical = cpu;
  for (auto& g : typical.gemm)
    if (g.shape.m == 1024 && g.shape.n == 1024 && g.shape.k == 1024) g.timing.typical_s = 1.1 * g.timing.time_s;
  Options typical_times = batch(1024);
  typical_times.typical_times = true;
  const auto est = estimate(linear_model(1024, 1024), typical, typical_times);
  EXPECT_NEAR(est.ops.at(0).compute_s, 1.1 * flops / 8e11, 1e-12);
  EXPECT_NEAR(estimate(linear_model(1024, 1024), typical, batch(1024)).ops.at(0).compute_s, flops / 8e11, 1e-12);
  // A vector op likewise: 1e9 elements/s at its fastest, 0.5e9 at its typical time.
  const Model m = gelu_model();
  typical.vector_ops.push_back(testing::vector_op_point("gelu", DType::f32, 1e9));
  typical.vector_ops.back().timing.typical_s = 2 * typical.vector_ops.back().timing.time_s;
  EXPECT_NEAR(estimate(m, typical, batch(1)).ops.at(0).compute_s, 65536 / 1e9, 1e-12);
  Options typical_vector = batch(1);
  typical_vector.typical_times = true;
  EXPECT_NEAR(estimate(m, typical, typical_vector).ops.at(0).compute_s, 65536 / 0.5e9, 1e-12);
}

TEST_F(FixtureCpu, InterpolatesBetweenTwoMeasuredPoints) {
  // 512^3 is one octave from 256^3 (2e11) and from 1024^3 (8e11) in every dimension: the
  // inverse-distance weighted geometric mean is sqrt(2e11 * 8e11) = 4e11.
  const auto est = estimate(linear_model(512, 512), cpu, batch(512));
  EXPECT_NEAR(est.ops.at(0).achieved_flops_per_s, 4e11, 1e3);
  // Nearer to the small point, nearer to its rate.
  const RateModel rates(cpu, DType::f32);
  const double r300 = rates.gemm_flops_per_s({1, 300, 300, 300});
  EXPECT_GT(r300, 2e11);
  EXPECT_LT(r300, 4e11);
}

TEST_F(FixtureCpu, OutsideTheMeasuredRangeNeverExceedsTheNearestMeasuredRate) {
  const RateModel rates(cpu, DType::f32);
  EXPECT_DOUBLE_EQ(rates.gemm_flops_per_s({1, 8192, 8192, 8192}), 8e11);  // not extrapolated upward
  // 16^3 takes the efficiency of the nearest measured shape (256^3: 0.25 of its compute roof) on
  // its own reference roofline: 3 x 16 x 16 x 4 B at main memory's 5e10 B/s (61.44 ns, above
  // 8192 FLOP / 8e11).
  EXPECT_NEAR(rates.gemm_flops_per_s({1, 16, 16, 16}), 8192 / (3072 / 5e10 / 0.25), 1);
  EXPECT_LE(rates.gemm_flops_per_s({1, 16, 16, 16}), 2e11);
  for (double s : {1.0, 7.0, 100.0, 3000.0, 1e5})
    EXPECT_LE(rates.gemm_flops_per_s({1, s, s, s}), 8e11) << s;
}

TEST(FixtureSkinny, SkinnyShapeTakesTheMeasuredEffectiveBandwidthOfSkinnyShapes) {
  // One measured point, M = 1 against a 4096 x 4096 f32 weight: it moved its bytes at half of
  // main memory's 5e10 B/s. Decode-like products are predicted at that effective bandwidth, for
  // a 2048 x 2048 weight (16 MiB, in DRAM) and for a 256 x 256 one (in L2, which could serve it
  // at 2e11 B/s), not at the measured FLOP rate of the larger product.
  Profile p = fixture("fixture_cpu.json");
  Device& d = p.devices.at(0);
  const GemmShape big{DType::f32, 1, 4096, 4096, 1};
  const double big_s = 2 * big.bytes() / 5e10;
  d.gemm = {{big, {big_s, big_s, 0.01, 10}, big.flops() / big_s, "fixture", "row-major"}};
  const RateModel rates(d, DType::f32);
  const GemmShape dram{DType::f32, 1, 2048, 2048, 1};
  EXPECT_NEAR(rates.gemm_time_s({1, 1, 2048, 2048}, dram.flops(), dram.bytes()), 2 * dram.bytes() / 5e10, 1e-12);
  const GemmShape l2{DType::f32, 1, 256, 256, 1};
  EXPECT_NEAR(rates.gemm_time_s({1, 1, 256, 256}, l2.flops(), l2.bytes()), 2 * l2.bytes() / 5e10, 1e-15);
  EXPECT_NEAR(rates.gemm_flops_per_s({1, 1, 256, 256}), l2.flops() / (2 * l2.bytes() / 5e10), 1);
  // Eight rows against the same weights: eight times the work, nearly the same bytes, still
  // memory-bound, so nearly the same time (a rate model would give eight times the time).
  const GemmShape eight{DType::f32, 8, 2048, 2048, 1};
  EXPECT_NEAR(rates.gemm_time_s({1, 8, 2048, 2048}, eight.flops(), eight.bytes()),
              2 * eight.bytes() / 5e10, 1e-12);
  EXPECT_LT(rates.gemm_time_s({1, 8, 2048, 2048}, eight.flops(), eight.bytes()),
            1.01 * rates.gemm_time_s({1, 1, 2048, 2048}, dram.flops(), dram.bytes()));
}

TEST(FixtureSkinny, AnInCachePointLendsAComputeBoundShapeNoMoreThanTheBestRate) {
  // Two measured products of 64 rows against 4096 columns, one octave apart in log2 K from the
  // query's 128 on either side: K = 16 (memory-bound on the reference roofline, run from the
  // caches at twice main memory's roof: efficiency 2) and K = 1024 (compute-bound, at half the
  // best rate of 8e11). The query is compute-bound: the first point counts at its ceiling (1), so
  // the query runs at sqrt(1 x 0.5) of the best rate, not at sqrt(2 x 0.5) = 1.
  Profile p = fixture("fixture_cpu.json");
  Device& d = p.devices.at(0);
  const GemmShape low{DType::f32, 64, 4096, 16, 1}, high{DType::f32, 64, 4096, 1024, 1};
  const double low_s = low.bytes() / 5e10 / 2, high_s = high.flops() / 4e11;
  d.gemm = {{low, {low_s, low_s, 0.01, 10}, low.flops() / low_s, "fixture", "row-major"},
            {high, {high_s, high_s, 0.01, 10}, high.flops() / high_s, "fixture", "row-major"}};
  const RateModel rates(d, DType::f32);
  EXPECT_NEAR(rates.gemm_flops_per_s({1, 64, 4096, 128}), 8e11 * std::sqrt(0.5), 1e6);
  // At its own shape, which its data's level serves that fast, the first point keeps its time.
  EXPECT_NEAR(rates.gemm_time_s({1, 64, 4096, 16}, low.flops(), low.bytes()), low_s, 1e-15);
}

TEST_F(FixtureCpu, WeightsComeFromTheLevelThatHoldsAllOfTheModelsWeights) {
  // Eight 256 x 256 f32 linears at batch 1: each weight (256 KiB) fits the 1 MiB L2, all eight
  // (2 MiB) do not, so a pass reads every weight from DRAM (5e10 B/s). The 1 KiB input stays in
  // L2 (2e11 B/s), but for the graph's input, which the first linear reads from DRAM as it does
  // the weights (read once a pass); the 1 KiB output goes to a buffer the pass has evicted since
  // its last use: read and written at DRAM's bandwidth.
  const auto est = estimate(testing::linear_stack(8, 256), cpu, batch(1));
  ASSERT_EQ(est.ops.size(), 8u);
  const double weights = 256.0 * 256 * 4, activation = 256.0 * 4;
  for (const auto& r : est.ops) {
    const double input_s = r.name == "fc0" ? activation / 5e10 : activation / 2e11;
    EXPECT_NEAR(r.memory_s, input_s + weights / 5e10 + 2 * activation / 5e10, 1e-15) << r.name;
    EXPECT_FALSE(r.compute_bound);
  }
  // One such linear alone keeps its weight and its output in L2.
  const auto one = estimate(linear_model(256, 256), cpu, batch(1));
  EXPECT_NEAR(one.ops.at(0).memory_s, (2 * activation + weights) / 2e11, 1e-15);
  const RateModel rates(cpu, DType::f32);
  EXPECT_NEAR(rates.memory_s(1000, 600, 4e6), 400 / 2e11 + 600 / 5e10, 1e-18);
}

TEST_F(FixtureCpu, GraphInputsComeFromTheLevelThatHoldsWhatAPassReadsOnce) {
  // A concatenation of two graph inputs of 256 KiB each (a KV cache and its new row, say): 512 KiB
  // of inputs, alone in the 1 MiB L2 with their 512 KiB output. With 2 MiB of weights in the
  // pass, the inputs come from DRAM.
  const auto join = [](std::int64_t width, bool view = false) {
    GraphBuilder b;
    const auto& x = b.input("x", {Dim::symbol("N"), 65536});
    const auto& y0 = b.input("y", {Dim::symbol("N"), 65536});
    // A view of y first: it moves nothing, and the concatenation still reads y from memory.
    const auto& y = view ? b.add(make_reshape("y_view", y0, {Dim::symbol("N"), 65536})) : y0;
    const auto& cat = b.add(make_concat("cat", {x, y}, 1));
    if (width > 0) b.add(make_linear("fc", cat, width, false));
    Model m;
    m.name = "join";
    m.forward = b.take();
    return m;
  };
  const double inputs = 2 * 65536.0 * 4;
  const auto alone = estimate(join(0), cpu, batch(1)).ops.at(0);
  EXPECT_NEAR(alone.memory_s, 2 * inputs / 2e11, 1e-15);
  // A linear of 131072 x 4 (2 MiB of weights) after it: the pass outgrows L2.
  const auto with_weights = estimate(join(4), cpu, batch(1)).ops.at(0);
  EXPECT_NEAR(with_weights.memory_s, inputs / 5e10 + 2 * inputs / 5e10, 1e-15);
  const auto viewed = estimate(join(4, true), cpu, batch(1)).ops;
  const auto cat = std::find_if(viewed.begin(), viewed.end(), [](const OpRow& r) { return r.name == "cat"; });
  ASSERT_NE(cat, viewed.end());
  EXPECT_NEAR(cat->memory_s, inputs / 5e10 + 2 * inputs / 5e10, 1e-15);
}

TEST_F(FixtureCpu, AnOutputTheCachesNoLongerHoldIsReadBeforeItIsWritten) {
  // memory_s(bytes, weight bytes, the model's weight bytes, output bytes); L2 1 MiB at 2e11 B/s,
  // DRAM 5e10 B/s.
  const RateModel rates(cpu, DType::f32);
  // Small output, small model: all in L2, the output once.
  EXPECT_NEAR(rates.memory_s(4000, 1000, 1000, 1000), 4000 / 2e11, 1e-18);
  // The same op in a model of 4 MiB of weights: the output line is read, then written, at DRAM's
  // bandwidth; the weights come from DRAM too.
  EXPECT_NEAR(rates.memory_s(4000, 1000, 4e6, 1000), 2000 / 2e11 + 1000 / 5e10 + 2000 / 5e10,
              1e-18);
  // An output larger than L2 in a small model: cold as well.
  const double out = 2e6;
  EXPECT_NEAR(rates.memory_s(out + 1000, 0, 0, out), 1000 / 5e10 + 2 * out / 5e10, 1e-15);
  // No output given: as before.
  EXPECT_NEAR(rates.memory_s(out + 1000, 0, 4e6), (out + 1000) / 5e10, 1e-15);
  // Through the model: a 64 MiB max pool writes a fresh 16 MiB output, twice at DRAM's bandwidth;
  // a ReLU of the same input may write in place, so its output counts once.
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), 64, 512, 512});
  b.add(make_pool("pool", "max", x, {2, 2, 2, 0, 1, 1}));
  Model pool;
  pool.name = "pool";
  pool.forward = b.take();
  const auto p = estimate(pool, cpu, batch(1)).ops.at(0);
  const double in = 64.0 * 512 * 512 * 4, pooled = in / 4;
  EXPECT_NEAR(p.memory_s, (in + 2 * pooled) / 5e10, 1e-12);
  const auto relu = estimate(relu_model(1 << 24), cpu, batch(1)).ops.at(0);
  EXPECT_NEAR(relu.memory_s, relu.bytes / 5e10, 1e-12);
  // So may a softmax.
  GraphBuilder sb;
  sb.add(make_softmax("softmax", sb.input("x", {Dim::symbol("N"), 1 << 20})));
  Model softmax;
  softmax.name = "softmax";
  softmax.forward = sb.take();
  const auto sm = estimate(softmax, cpu, batch(16)).ops.at(0);
  EXPECT_NEAR(sm.memory_s, sm.bytes / 5e10, 1e-12);
}

TEST_F(FixtureCpu, OutputsColdOnlyBeyondTheCachesAndNeverMoreThanTheActivations) {
  const RateModel rates(cpu, DType::f32);
  // An output of exactly the L2's 1 MiB in a model that fits: still held, counted once.
  const double mib = 1 << 20;
  EXPECT_NEAR(rates.memory_s(2 * mib, 0, 0, mib), 2 * mib / 5e10, 1e-15);
  // Said to write 500 bytes of the 200 that are not weights: the output is the 200.
  EXPECT_NEAR(rates.memory_s(1000, 800, 4e6, 500), 800 / 5e10 + 2 * 200 / 5e10, 1e-18);
}

TEST(FixtureCpuRegularStores, AMainMemoryFigureOfRegularStoresHoldsTheReadsAlready) {
  // A profile whose main-memory triads stored regularly: their figure holds the line reads, so a
  // cold output counts once.
  Profile p = fixture("fixture_cpu.json");
  Device& d = p.devices.at(0);
  d.properties["main_memory_stores"] = "regular";
  const RateModel regular(d, DType::f32);
  EXPECT_NEAR(regular.memory_s(4000, 1000, 4e6, 1000), 2000 / 2e11 + 1000 / 5e10 + 1000 / 2e11,
              1e-18);
  // A profile from before the property: streaming stores where AVX-512 was there.
  d.properties = {{"isa", {{"avx512f", true}}}};
  EXPECT_NEAR(RateModel(d, DType::f32).memory_s(4000, 1000, 4e6, 1000),
              2000 / 2e11 + 1000 / 5e10 + 2000 / 5e10, 1e-18);
  d.properties = {{"isa", {{"avx512f", false}}}};
  EXPECT_NEAR(RateModel(d, DType::f32).memory_s(4000, 1000, 4e6, 1000),
              2000 / 2e11 + 1000 / 5e10 + 1000 / 2e11, 1e-18);
}

// What the i-th op of a chain of equal ops (each reading the one before) moves inside a model
// whose weights outgrow the fixture's 1 MiB L2 beyond what its point moved alone: its output of
// `bytes`, which the caches no longer hold, read and written at DRAM's 5e10 B/s rather than
// written into the L2 (2e11 B/s); the first op also reads the graph input from DRAM.
double chain_extra_s(std::size_t i, double bytes) {
  const double output = 2 * bytes / 5e10 - bytes / 2e11;
  return i == 0 ? output + bytes / 5e10 - bytes / 2e11 : output;
}

// The CPU fixture with one GEMM point, 1 x 256 x 256, measured warm and with cold weights.
Profile warm_and_cold_gemm(double warm_s, double cold_s) {
  Profile p = fixture("fixture_cpu.json");
  const GemmShape s{DType::f32, 1, 256, 256, 1};
  p.devices.at(0).gemm = {
      {s, {warm_s, warm_s, 0.01, 10}, s.flops() / warm_s, "fixture", "row-major"},
      {s, {cold_s, cold_s, 0.01, 10}, s.flops() / cold_s, "fixture", "row-major", true}};
  return p;
}

TEST_F(FixtureCpu, AProductInsideAModelTakesTheTrafficItsPointDidNotHave) {
  // The 256^3 point (0.168 ms) moved its 768 KiB from the 1 MiB L2. Alone, a 256 -> 256 linear
  // over 256 rows is that point. In a stack of eight (2 MiB of weights, past the L2) a middle
  // one's weights come from main memory, as a cold point's do, but its output, which the caches
  // no longer hold, costs its line reads and writes there (2 x 256 KiB at 5e10 B/s) where the
  // point wrote 256 KiB into the L2 (2e11 B/s): 9.18 us more.
  const double point_s = 0.00016777216, kib = 1024;
  const auto alone = estimate(testing::linear_model(256, 256), cpu, batch(256)).ops.at(0);
  EXPECT_NEAR(alone.compute_s, point_s, 1e-12);
  const auto stack = estimate(testing::linear_stack(8, 256), cpu, batch(256));
  ASSERT_EQ(stack.ops.size(), 8u);
  const double extra = 2 * 256 * kib / 5e10 - 256 * kib / 2e11;
  for (std::size_t i = 1; i < stack.ops.size(); ++i)
    EXPECT_NEAR(stack.ops[i].compute_s, point_s + extra, 1e-10) << stack.ops[i].name;
  // The first one also reads the graph input from main memory (256 KiB at 5e10, not 2e11).
  EXPECT_NEAR(stack.ops[0].compute_s, point_s + extra + 256 * kib / 5e10 - 256 * kib / 2e11, 1e-10);
}

TEST(FixtureCold, LinearsOfAModelLargerThanTheCachesTakeTheColdWeightPoints) {
  // Warm 10 us, cold 18 us. One such linear (256 KiB of weights, inside the 1 MiB L2) runs
  // warm; each of a stack of eight (2 MiB) runs cold.
  const Profile p = warm_and_cold_gemm(10e-6, 18e-6);
  const Device& d = p.devices.at(0);
  const auto one = estimate(linear_model(256, 256), d, batch(1));
  EXPECT_NEAR(one.ops.at(0).compute_s, 10e-6, 1e-12);
  const auto stack = estimate(testing::linear_stack(8, 256), d, batch(1));
  ASSERT_EQ(stack.ops.size(), 8u);
  for (std::size_t i = 0; i < stack.ops.size(); ++i) {
    const auto& r = stack.ops[i];
    EXPECT_NEAR(r.compute_s, 18e-6 + chain_extra_s(i, 1024), 1e-12) << r.name;
    EXPECT_NEAR(r.time_s, r.compute_s + kOverhead, 1e-12) << r.name;
  }
}

TEST(FixtureCold, AColdFigureIsTakenAsMeasuredEvenPastOneMoreReadOfItsWeights) {
  // Reading 256 KiB of weights from DRAM (5e10 B/s) once more would add 5.24 us to the warm
  // 10 us; a kernel that passes over them several times takes longer, and a cold point measured
  // at 30 us is taken at 30 us, one at 18 us at 18 us.
  for (const auto& [cold, expected] : {std::pair{30e-6, 30e-6}, std::pair{18e-6, 18e-6}}) {
    const Profile p = warm_and_cold_gemm(10e-6, cold);
    const auto rows = estimate(testing::linear_stack(8, 256), p.devices.at(0), batch(1)).ops;
    for (std::size_t i = 0; i < rows.size(); ++i)
      EXPECT_NEAR(rows[i].compute_s, expected + chain_extra_s(i, 1024), 1e-12)
          << rows[i].name << " cold " << cold;
  }
}

TEST(FixtureCold, AColdFigureFasterThanTheWarmOneBoundsTheWarmOne) {
  // Cold weights can only add time: warm 30 us beside cold 10 us means the warm point met a slow
  // spell. The single linear (warm caches) takes 10 us too. The stack (cold) takes its cold
  // point alone: a warm point left beside its twin would win the tie at 30 us.
  const Profile p = warm_and_cold_gemm(30e-6, 10e-6);
  EXPECT_NEAR(estimate(linear_model(256, 256), p.devices.at(0), batch(1)).ops.at(0).compute_s, 10e-6, 1e-12);
  const auto rows = estimate(testing::linear_stack(8, 256), p.devices.at(0), batch(1)).ops;
  for (std::size_t i = 0; i < rows.size(); ++i)
    EXPECT_NEAR(rows[i].compute_s, 10e-6 + chain_extra_s(i, 1024), 1e-12) << rows[i].name;
}

TEST(FixtureCpuLinears, ALinearRunAsAConvolutionTakesTheConvolutionPoints) {
  // A 1x1 convolution of 256 -> 256 channels on 1x1 measured at 20 us, while the GEMMs of the
  // fixture say otherwise: as a convolution, the linear x[1, 256] W[256, 256] takes 20 us, as the
  // same convolution in the graph does.
  Profile p = fixture("fixture_cpu.json");
  Device& d = p.devices.at(0);
  const ConvShape s = ConvShape::parse("f32_mb1ic256ih1oc256kh1ph0");
  d.conv = {{s, "blocked", {20e-6, 20e-6, 0.01, 10}, s.flops() / 20e-6, "fixture"}};
  const auto as_matmul = estimate(linear_model(256, 256), d, batch(1));
  Options o = batch(1);
  o.linears_as_convolutions = true;
  const auto as_conv = estimate(linear_model(256, 256), d, o);
  const auto measured = estimate(testing::one_conv_model(256, 1, 256), d, batch(1));
  EXPECT_NEAR(measured.ops.at(0).compute_s, 20e-6, 1e-12);
  EXPECT_NEAR(as_conv.ops.at(0).compute_s, measured.ops.at(0).compute_s, 1e-12);
  EXPECT_NE(as_matmul.ops.at(0).compute_s, as_conv.ops.at(0).compute_s);
  EXPECT_EQ(as_conv.ops.at(0).kind, "linear");
}

TEST(FixtureCold, ConvolutionsOfAModelLargerThanTheCachesTakeTheColdWeightPoints) {
  // A 3x3 conv of 64 -> 64 channels on 8x8 (144 KiB of f32 weights) measured warm (40 us) and
  // with cold weights (45 us, within the 5.9 us that reading them twice from DRAM allows). Alone
  // it fits the 1 MiB L2 and runs warm; in a stack of eight (1.1 MiB of weights) each runs cold.
  Profile p = fixture("fixture_cpu.json");
  Device& d = p.devices.at(0);
  const ConvShape s = ConvShape::parse("f32_mb1ic64ih8oc64kh3ph1");
  d.conv = {{s, "blocked", {40e-6, 40e-6, 0.01, 10}, s.flops() / 40e-6, "fixture"},
            {s, "blocked", {45e-6, 45e-6, 0.01, 10}, s.flops() / 45e-6, "fixture", true}};
  const auto stack_of = [](int layers) {
    GraphBuilder b;
    const TensorRef* x = &b.input("x", {Dim::symbol("N"), 64, 8, 8});
    for (int i = 0; i < layers; ++i) {
      std::string name = "conv";
      name += std::to_string(i);
      x = &b.add(make_conv2d(name, *x, 64, {3, 3, 1, 1, 1, 1}, false));
    }
    Model m;
    m.name = "convs";
    m.forward = b.take();
    return m;
  };
  const auto one = estimate(stack_of(1), d, batch(1));
  EXPECT_NEAR(one.ops.at(0).compute_s, 40e-6, 1e-12);
  const auto eight = estimate(stack_of(8), d, batch(1));
  ASSERT_EQ(eight.ops.size(), 8u);
  for (std::size_t i = 0; i < eight.ops.size(); ++i)
    EXPECT_NEAR(eight.ops[i].compute_s, 45e-6 + chain_extra_s(i, 64 * 8 * 8 * 4), 1e-12)
        << eight.ops[i].name;
}

TEST(FixtureStride, AStridedConvolutionTakesTheStridedPointOfItsShape) {
  // A 3x3 conv of 64 -> 64 channels to 8x8, unstrided from 8x8 (40 us) and with stride 2 from
  // 16x16 (80 us): the same implicit GEMM (64 x 64 x 576), each timed by its own point. A 1x1
  // conv (k clamped into the measured box) takes the efficiency of its stride's point.
  Profile p = fixture("fixture_cpu.json");
  Device& d = p.devices.at(0);
  const ConvShape plain = ConvShape::parse("f32_mb1ic64ih8oc64kh3ph1");
  const ConvShape strided = ConvShape::parse("f32_mb1ic64ih16oc64kh3sh2ph1");
  d.conv = {{plain, "blocked", {40e-6, 40e-6, 0.01, 10}, plain.flops() / 40e-6, "fixture"},
            {strided, "blocked", {80e-6, 80e-6, 0.01, 10}, strided.flops() / 80e-6, "fixture"}};
  const auto conv_of = [](std::int64_t size, std::int64_t kernel, std::int64_t stride) {
    GraphBuilder b;
    const auto& x = b.input("x", {Dim::symbol("N"), 64, size, size});
    b.add(make_conv2d("c", x, 64, {kernel, kernel, stride, kernel / 2, 1, 1}, false));
    Model m;
    m.name = "conv";
    m.forward = b.take();
    return m;
  };
  EXPECT_NEAR(estimate(conv_of(8, 3, 1), d, batch(1)).ops.at(0).compute_s, 40e-6, 1e-12);
  EXPECT_NEAR(estimate(conv_of(16, 3, 2), d, batch(1)).ops.at(0).compute_s, 80e-6, 1e-12);
  const auto one_by_one = estimate(conv_of(16, 1, 2), d, batch(1)).ops.at(0);
  const auto one_by_one_plain = estimate(conv_of(8, 1, 1), d, batch(1)).ops.at(0);
  EXPECT_GT(one_by_one.compute_s, 1.5 * one_by_one_plain.compute_s);
}

TEST(FixtureCold, ACacheBarelyFasterThanMemoryKeepsNoWeightsWarm) {
  // The fixture's 1 MiB L2 (2e11 B/s, 4x DRAM) keeps weights; a 64 MiB L3 measured at 6e10 B/s
  // (1.2x DRAM's 5e10) does not, so a model of 2 MiB of weights still takes the cold points.
  // An L3 at 2.4x DRAM does.
  Profile p = fixture("fixture_cpu.json");
  Device& d = p.devices.at(0);
  EXPECT_DOUBLE_EQ(RateModel(d, DType::f32).largest_cache_bytes(), 1 << 20);
  auto l3 = d.memory_levels.back();
  l3.name = "L3";
  l3.bytes = 64 << 20;
  l3.Bps = 6e10;
  d.memory_levels.insert(d.memory_levels.end() - 1, l3);
  EXPECT_DOUBLE_EQ(RateModel(d, DType::f32).largest_cache_bytes(), 1 << 20);
  d.memory_levels[d.memory_levels.size() - 2].Bps = 1.2e11;
  EXPECT_DOUBLE_EQ(RateModel(d, DType::f32).largest_cache_bytes(), 64 << 20);
}

TEST(FixtureCold, ACacheHoldsOnlyWhatTheSweepMeasuredItHolding) {
  // A 64 MiB L3 at 1.2e11 B/s (2.4x DRAM's 5e10) whose sweep served 16 MiB at that rate but
  // 32 MiB at 5.5e10 B/s: it keeps 16 MiB, and 24 MiB of weights take main memory's rate.
  Profile p = fixture("fixture_cpu.json");
  Device& d = p.devices.at(0);
  auto l3 = d.memory_levels.back();
  l3.name = "L3";
  l3.bytes = 64 << 20;
  l3.Bps = 1.2e11;
  d.memory_levels.insert(d.memory_levels.end() - 1, l3);
  d.memory_sweep = {{"triad", 8 << 20, 1.25e11, 1.2e11},
                    {"triad", 16 << 20, 1.2e11, 1.1e11},
                    {"copy", 32 << 20, 1.2e11, 1.1e11},  // another kernel: not the triad's say
                    {"triad", 32 << 20, 5.5e10, 5e10},
                    {"triad", 256 << 20, 5e10, 4.8e10}};
  const RateModel shrunk(d, DType::f32);
  EXPECT_DOUBLE_EQ(shrunk.largest_cache_bytes(), 16 << 20);
  EXPECT_DOUBLE_EQ(shrunk.Bps(12 << 20), 1.2e11);
  EXPECT_DOUBLE_EQ(shrunk.Bps(24 << 20), 5e10);
  EXPECT_DOUBLE_EQ(shrunk.Bps(512 << 10), 2e11);  // the L2 as before
  // A slow point below a fast one is the sweep's noise, not the cache's end.
  d.memory_sweep[1].Bps = 5.5e10;
  d.memory_sweep[3].Bps = 1.2e11;
  const RateModel whole(d, DType::f32);
  EXPECT_DOUBLE_EQ(whole.largest_cache_bytes(), 64 << 20);
  EXPECT_DOUBLE_EQ(whole.Bps(24 << 20), 1.2e11);
  // A model of 24 MiB of weights finds them cold in the first cache and warm in the second.
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), 3072});
  b.add(make_linear("fc", x, 2048, false));
  Model m;
  m.name = "fc";
  m.forward = b.take();
  d.memory_sweep[1].Bps = 1.2e11;
  d.memory_sweep[3].Bps = 5.5e10;
  const double cold_s = estimate(m, d, batch(1)).ops.at(0).memory_s;
  d.memory_sweep[3].Bps = 1.2e11;
  const double warm_s = estimate(m, d, batch(1)).ops.at(0).memory_s;
  EXPECT_NEAR(cold_s / warm_s, 1.2e11 / 5e10, 0.05);
}

TEST_F(FixtureCpu, CausalAttentionTakesHalfTheTimeOfFullAttention) {
  // 16 heads x 1024 x 1024 x 64: compute-bound, so skipping the masked half halves the time.
  const auto attention = [&](bool causal) {
    GraphBuilder b;
    const auto& q = b.input("q", {Dim::symbol("N"), 16, 1024, 64});
    const auto& k = b.input("k", {Dim::symbol("N"), 16, 1024, 64});
    const auto& v = b.input("v", {Dim::symbol("N"), 16, 1024, 64});
    b.add(make_attention("attn", q, k, v, causal));
    Model m;
    m.name = "attention";
    m.forward = b.take();
    return estimate(m, cpu, batch(1)).ops.at(0);
  };
  const auto full = attention(false), causal = attention(true);
  ASSERT_TRUE(full.compute_bound);
  EXPECT_DOUBLE_EQ(causal.flops, full.flops / 2);
  EXPECT_NEAR(causal.compute_s, full.compute_s / 2, 1e-12);
  EXPECT_NEAR(causal.achieved_flops_per_s, full.achieved_flops_per_s, 1);
}

TEST_F(FixtureCpu, RuntimeOverheadReplacesTheProfilesPerOpOverhead) {
  Options o = batch(4);
  const auto library = estimate(relu_model(1 << 10), cpu, o);
  o.op_overhead_s = 20e-6;
  const auto runtime = estimate(relu_model(1 << 10), cpu, o);
  EXPECT_DOUBLE_EQ(library.ops.at(0).overhead_s, kOverhead);
  EXPECT_DOUBLE_EQ(runtime.ops.at(0).overhead_s, 20e-6);
  EXPECT_NEAR(runtime.latency_s - library.latency_s, 20e-6 - kOverhead, 1e-15);
}

TEST_F(FixtureCpu, ConvWithoutConvPointsUsesItsImplicitGemmShape) {
  // 1x1 conv of 256 -> 256 channels on 16x16: implicit GEMM m = 256, n = 256, k = 256 -> 2e11.
  const auto est = estimate(testing::one_conv_model(256, 16, 256), cpu, batch(1));
  EXPECT_NEAR(est.ops.at(0).achieved_flops_per_s, 2e11, 1);
}

// The fixture CPU with blocked convolution points: a 1x1 of 128 -> 128 channels on 14x14 and a
// depthwise 3x3 of 144 channels on 56x56, each at 1e11 FLOP/s (compute bound: the fixture's
// memory is fast enough), and `isa` as given.
Device with_blocked_points(const Device& cpu, bool avx512) {
  Device d = cpu;
  d.properties["isa"] = {{"avx512f", avx512}};
  const auto point = [](std::int64_t c, std::int64_t hw, std::int64_t r, std::int64_t groups) {
    ConvShape s;
    s.dtype = DType::f32;
    s.n = 1, s.c = c, s.h = hw, s.w = hw, s.k = c, s.r = r, s.s = r;
    s.stride = 1, s.pad = r / 2, s.dilation = 1, s.groups = groups;
    ConvPoint p;
    p.shape = s;
    p.layout = "blocked";
    p.flops_per_s = 1e11;
    p.timing.time_s = s.flops() / p.flops_per_s;
    return p;
  };
  d.conv = {point(128, 14, 1, 1), point(144, 56, 3, 144)};
  return d;
}

TEST_F(FixtureCpu, AConvolutionLeftPlainTakesThePlainPointsUnpadded) {
  // The blocked points, and a plain depthwise point (a blocked runtime's kernel for channels its
  // layout's rule leaves out) at a tenth of their rate.
  Device d = with_blocked_points(cpu, true);
  ConvPoint plain = d.conv.at(1);
  plain.layout = "nchw";
  plain.flops_per_s = 1e10;
  plain.timing.time_s = plain.shape.flops() / plain.flops_per_s;
  d.conv.push_back(plain);
  const RateModel blocked(d, DType::f32, "blocked");
  const GemmCoords q136{136, 3136, 1, 9};
  const double f136 = 2.0 * 136 * 3136 * 9, b136 = 4 * (2 * 136 * 3136 + 136 * 9.0);
  ConvCall call;
  call.plain = true;
  // Plain: the plain point's rate on its own 136 channels; blocked: the blocked point's, padded.
  EXPECT_NEAR(blocked.conv_time_s(q136, f136, b136, 136, true, 1, false, 136, 136, call), f136 / 1e10, 1e-12);
  EXPECT_NEAR(blocked.conv_time_s(q136, f136, b136, 136, true, 1, false, 136, 136), 2.0 * 144 * 3136 * 9 / 1e11,
              1e-12);
  // A plain dense call has no plain point of its class: the blocked ones stand in.
  const GemmCoords q128{1, 196, 128, 128};
  const double f128 = 2.0 * 128 * 128 * 196;
  EXPECT_NEAR(blocked.conv_time_s(q128, f128, 4 * (2 * 128 * 196 + 128 * 128.0), 1, false, 1, false, 128, 128, call),
              f128 / 1e11, 1e-12);
  // The plain point never raises the best rate, and no layout asked for keeps each shape's fastest.
  EXPECT_DOUBLE_EQ(blocked.best_flops_per_s(), RateModel(with_blocked_points(cpu, true), DType::f32, "blocked")
                                                   .best_flops_per_s());
  const RateModel any(d, DType::f32);
  EXPECT_NEAR(any.conv_time_s(q136, f136, b136, 136, true, 1, false, 136, 136, call), f136 / 1e11, 1e-12);
  // Through an estimate: a runtime whose blocked layout takes multiples of 16 channels runs the
  // depthwise 3x3 over 136 at the plain point's rate; with every convolution blocked, at the
  // padded blocked point's.
  Options o = batch(1);
  o.conv_layout = "blocked";
  o.blocked_layout = BlockedLayout{};
  o.blocked_layout->conv_channel_multiple = 16;
  const Model dw = testing::one_conv_model(136, 56, 136, {3, 3, 1, 1, 1, 136}, "dw");
  const auto conv_row = [](const Estimate& e) {
    return *std::find_if(e.ops.begin(), e.ops.end(), [](const OpRow& r) { return r.kind == "conv2d"; });
  };
  EXPECT_NEAR(conv_row(estimate(dw, d, o)).compute_s, f136 / 1e10, 1e-12);
  o.blocked_layout->conv_channel_multiple = 1;
  EXPECT_NEAR(conv_row(estimate(dw, d, o)).compute_s, 2.0 * 144 * 3136 * 9 / 1e11, 1e-12);
}

TEST_F(FixtureCpu, BlockedConvolutionsRunOnChannelsPaddedToWholeBlocks) {
  const RateModel blocked(with_blocked_points(cpu, true), DType::f32, "blocked");
  const RateModel any(with_blocked_points(cpu, true), DType::f32);
  const RateModel blocked_avx2(with_blocked_points(cpu, false), DType::f32, "blocked");
  // A 1x1 of 116 -> 116 channels on 14x14: in 16-channel blocks, the 128-channel point's time.
  const auto flops = [](double c, double k, double hw, double rs) { return 2 * c * k * hw * hw * rs; };
  const double t128 = flops(128, 128, 14, 1) / 1e11;
  const GemmCoords q116{1, 196, 116, 116};
  const double f116 = flops(116, 116, 14, 1), bytes116 = 4 * (2 * 116 * 196 + 116 * 116);
  EXPECT_NEAR(blocked.conv_time_s(q116, f116, bytes116, 1, false, 1, false, 116, 116), t128, 1e-12);
  // With no layout asked for (or channels not given), no padding: the measured rate of a nearby
  // shape, on the op's own work.
  EXPECT_NEAR(any.conv_time_s(q116, f116, bytes116, 1, false, 1, false, 116, 116), f116 / 1e11, 1e-12);
  EXPECT_NEAR(blocked.conv_time_s(q116, f116, bytes116, 1, false), f116 / 1e11, 1e-12);
  // In 8-channel blocks (AVX2) 116 channels run as 120.
  EXPECT_NEAR(blocked_avx2.conv_time_s(q116, f116, bytes116, 1, false, 1, false, 116, 116),
              flops(120, 120, 14, 1) / 1e11, 1e-12);
  // A depthwise 3x3 of 136 channels on 56x56 runs as 144.
  const GemmCoords q136{136, 3136, 1, 9};
  const double f136 = 2.0 * 136 * 3136 * 9;
  EXPECT_NEAR(blocked.conv_time_s(q136, f136, 4 * (2 * 136 * 3136 + 136 * 9.0), 136, true, 1, false, 136, 136),
              2.0 * 144 * 3136 * 9 / 1e11, 1e-12);
  // A linear of 116 -> 116 features over 196 rows, run as a 1x1 convolution in the blocked
  // layout, pads its features as channels: the 128-channel point's time.
  Options o = batch(196);
  o.linears_as_convolutions = true;
  o.conv_layout = "blocked";
  const Device padded = with_blocked_points(cpu, true);
  EXPECT_NEAR(estimate(linear_model(116, 116), padded, o).ops.at(0).compute_s, t128, 1e-12);
  o.conv_layout.clear();
  EXPECT_NEAR(estimate(linear_model(116, 116), padded, o).ops.at(0).compute_s, f116 / 1e11, 1e-12);
  // A grouped convolution (not depthwise) is blocked by its group's width: never padded.
  Device grouped = with_blocked_points(cpu, true);
  ConvShape gs = grouped.conv.at(0).shape;
  gs.c = gs.k = 128, gs.r = gs.s = 3, gs.pad = 1, gs.groups = 4;
  grouped.conv = {{gs, "blocked", {gs.flops() / 1e11, gs.flops() / 1e11, 0.01, 10}, 1e11, "fixture"}};
  const RateModel grouped_blocked(grouped, DType::f32, "blocked");
  const double f120 = 2.0 * 196 * 120 * 30 * 9;  // 120 channels in 4 groups of 30
  EXPECT_NEAR(grouped_blocked.conv_time_s({4, 196, 30, 270}, f120, 4 * (2 * 120 * 196 + 120 * 270.0), 4,
                                          false, 1, false, 120, 120),
              f120 / 1e11, 1e-12);
  // Channels that fill whole blocks are unchanged: the 128-channel point itself.
  const GemmCoords q128{1, 196, 128, 128};
  EXPECT_NEAR(blocked.conv_time_s(q128, flops(128, 128, 14, 1), 4 * (2 * 128 * 196 + 128 * 128.0), 1,
                                  false, 1, false, 128, 128),
              t128, 1e-12);
}

// A framework's rule for small convolutions, as torch's eager CPU path has it: batch 1, dense,
// window at most 3 (its smaller side), at most 20,480 input elements, strided or not.
RuntimeConvDispatch small_call_rule() {
  RuntimeConvDispatch d;
  d.impl = "native";
  d.max_input_elements = 20480;
  d.max_batch = 1;
  d.max_window = 3;
  d.window_smaller_side = true;
  d.strided = true;
  return d;
}

TEST(ConvDispatch, ACallRunsThereOnlyWhenItMeetsEveryCondition) {
  const auto rule = small_call_rule();
  // 104 channels on 14x14: 20,384 input elements.
  const ConvCall small{1, 104 * 196.0, 1, 1, 1, 1, false};
  EXPECT_TRUE(runs_dispatched_impl(rule, small));
  ConvCall c = small;
  c.input_elements = 105 * 196.0;  // 20,580
  EXPECT_FALSE(runs_dispatched_impl(rule, c));
  c = small;
  c.batch = 2;
  EXPECT_FALSE(runs_dispatched_impl(rule, c));
  c = small;
  c.window_h = c.window_w = 5;
  EXPECT_FALSE(runs_dispatched_impl(rule, c));
  c.window_h = 1;  // a 1x5 window counts by its smaller side
  EXPECT_TRUE(runs_dispatched_impl(rule, c));
  auto larger_side = rule;
  larger_side.window_smaller_side = false;
  EXPECT_FALSE(runs_dispatched_impl(larger_side, c));
  c = small;
  c.stride = 2;
  EXPECT_TRUE(runs_dispatched_impl(rule, c));
  auto unstrided = rule;
  unstrided.strided = false;
  EXPECT_FALSE(runs_dispatched_impl(unstrided, c));
  c = small;
  c.groups = 104, c.depthwise = true;
  EXPECT_FALSE(runs_dispatched_impl(rule, c));
  c.groups = 4, c.depthwise = false;
  EXPECT_FALSE(runs_dispatched_impl(rule, c));
  auto grouped = rule;
  grouped.grouped = true;
  EXPECT_TRUE(runs_dispatched_impl(grouped, c));
  // Not a forward convolution (a gradient): no rule applies.
  EXPECT_FALSE(runs_dispatched_impl(rule, ConvCall{}));
  auto unbounded = rule;
  unbounded.max_input_elements.reset();
  c = small;
  c.input_elements = 1e9;
  EXPECT_TRUE(runs_dispatched_impl(unbounded, c));
}

TEST_F(FixtureCpu, AConvolutionInterpolatesAmongThePointsOfTheImplementationItRuns) {
  // Two 1x1 points either side of the rule's bound, 104 and 112 channels on 14x14: the small
  // call's path at 1e11 FLOP/s, the library's at 2.5e10.
  Device d = cpu;
  const auto point = [](std::int64_t c, double rate, const std::string& impl) {
    ConvShape s;
    s.dtype = DType::f32;
    s.n = 1, s.c = c, s.h = 14, s.w = 14, s.k = c, s.r = 1, s.s = 1;
    s.stride = 1, s.pad = 0, s.dilation = 1, s.groups = 1;
    const double t = s.flops() / rate;
    return ConvPoint{s, "nchw", {t, t, 0.01, 10}, rate, impl};
  };
  d.conv = {point(104, 1e11, "native"), point(112, 2.5e10, "library")};
  const RateModel split(d, DType::f32, "", std::nullopt, false, small_call_rule());
  const RateModel one(d, DType::f32);
  const auto time = [](const RateModel& rates, double c) {
    const double f = 2 * c * c * 196;
    return rates.conv_time_s({1, 196, c, c}, f, 4 * (2 * c * 196 + c * c), 1, false, 1, false,
                             static_cast<std::int64_t>(c), static_cast<std::int64_t>(c),
                             ConvCall{1, c * 196, 1, 1, 1, 1, false});
  };
  // 100 channels run the small call's path, 108 the library's: each at its own points' rate,
  // where one set of points would blend the two.
  EXPECT_NEAR(time(split, 100), 2.0 * 100 * 100 * 196 / 1e11, 1e-12);
  EXPECT_NEAR(time(split, 108), 2.0 * 108 * 108 * 196 / 2.5e10, 1e-12);
  EXPECT_LT(time(one, 108), 0.9 * time(split, 108));
  // A rule whose implementation has no point of the class: the other points serve.
  auto elsewhere = small_call_rule();
  elsewhere.impl = "unmeasured";
  const RateModel none(d, DType::f32, "", std::nullopt, false, elsewhere);
  EXPECT_NEAR(time(none, 100), time(one, 100), 1e-15);
  // Through the estimate: Options::conv_dispatch.
  Options o = batch(1);
  const double library_only = estimate(testing::one_conv_model(108, 14, 108), d, o).ops.at(0).compute_s;
  o.conv_dispatch = small_call_rule();
  EXPECT_GT(estimate(testing::one_conv_model(108, 14, 108), d, o).ops.at(0).compute_s, 1.1 * library_only);
}

TEST_F(FixtureCpu, AConvolutionTakesAtLeastItsPathsCallCost) {
  const ConvCall small{1, 104 * 196.0, 1, 1, 1, 1, false};
  ConvCall batched = small;
  batched.batch = 2;
  auto rule = small_call_rule();
  const RateModel unmeasured(cpu, DType::f32, "", std::nullopt, false, rule);
  EXPECT_FALSE(unmeasured.conv_call_s(small).has_value());
  rule.op_s = 9e-6;
  rule.others_op_s = 5e-3;  // far above the layer's time at the fixture's rates: the bound holds
  const RateModel rates(cpu, DType::f32, "", std::nullopt, false, rule);
  EXPECT_DOUBLE_EQ(rates.conv_call_s(small).value_or(0), 9e-6);
  EXPECT_DOUBLE_EQ(rates.conv_call_s(batched).value_or(0), 5e-3);
  EXPECT_FALSE(rates.conv_call_s(ConvCall{}).has_value());  // a gradient: no rule applies
  EXPECT_FALSE(RateModel(cpu, DType::f32).conv_call_s(small).has_value());  // no rule
  // Through the estimate: a 104-channel 14x14 layer at batch 1 takes the small path, whose cost
  // is below the layer's time, which stays as without the costs; at batch 2 the library's path,
  // and the layer takes that path's cost and its work at the best rate.
  Options o = batch(1);
  o.conv_dispatch = small_call_rule();
  const auto plain1 = estimate(testing::one_conv_model(104, 14, 104), cpu, o).ops.at(0);
  o.batch = 2;
  const auto plain2 = estimate(testing::one_conv_model(104, 14, 104), cpu, o).ops.at(0);
  ASSERT_LT(plain2.time_s, 1e-3);
  o.conv_dispatch = rule;
  o.batch = 1;
  EXPECT_DOUBLE_EQ(estimate(testing::one_conv_model(104, 14, 104), cpu, o).ops.at(0).time_s, plain1.time_s);
  o.batch = 2;
  const auto bound = estimate(testing::one_conv_model(104, 14, 104), cpu, o).ops.at(0);
  EXPECT_NEAR(bound.time_s, 5e-3 + bound.flops / rates.best_flops_per_s(), 1e-12);
  EXPECT_NEAR(bound.overhead_s, bound.time_s - std::max(bound.compute_s, bound.memory_s), 1e-12);
}

TEST_F(FixtureCpu, MissingDtypeIsAnInputError) {
  EXPECT_THROW(estimate(linear_model(64, 64), cpu, batch(1, DType::int8)), InputError);
}

TEST(FixtureGpu, OutputsAreWrittenOnce) {
  // A GPU's L2 takes a whole-sector write without reading the line: no doubling, even for an
  // output far beyond its caches.
  // Fixture: HBM at 3e12 B/s.
  const Profile p = fixture("fixture_gpu_conv.json");
  const RateModel rates(p.devices.at(0), DType::bf16);
  const double out = 1e9;
  EXPECT_NEAR(rates.memory_s(2 * out, 0, 1e10, out), 2 * out / 3e12, 1e-12);
}

TEST(FixtureGpu, ConvUsesMeasuredConvPoints) {
  const Profile p = fixture("fixture_gpu_conv.json");
  const auto est = estimate(testing::one_conv_model(64, 56, 64, {3, 3, 1, 1, 1, 1}), p.devices.at(0),
                            batch(32, DType::bf16));
  EXPECT_NEAR(est.ops.at(0).achieved_flops_per_s, 2.5e14, 1e3);
}

TEST(FixtureGpu, ProductsWithUnalignedRowsTakeTheUnalignedPoints) {
  // Fixture: bf16 4096^3 at 8e14 FLOP/s. Add a product of odd n at a tenth of that rate.
  Profile p = fixture("fixture_gpu_conv.json");
  Device& gpu = p.devices.at(0);
  const GemmShape odd{DType::bf16, 4096, 4095, 4096, 1};
  const double slow = 8e13;
  gpu.gemm.push_back({odd, {odd.flops() / slow, odd.flops() / slow, 0.01, 10}, slow, "fixture", "tn"});
  const RateModel rates(gpu, DType::bf16);
  const auto rate = [&](double n, double k) {
    const GemmShape s{DType::bf16, 4096, static_cast<std::int64_t>(n), static_cast<std::int64_t>(k), 1};
    return s.flops() / rates.gemm_time_s({1, 4096, n, k}, s.flops(), s.bytes());
  };
  EXPECT_NEAR(rate(4095, 4096), slow, 1e3);
  EXPECT_NEAR(rate(4096, 4096), 8e14, 1e3);  // aligned: the odd point lends it nothing
  EXPECT_LT(rate(4096, 4097), 2 * slow);     // an odd k leaves the operands' rows unaligned
  EXPECT_TRUE(gemm_rows_aligned(DType::bf16, 4096, 776));
  EXPECT_FALSE(gemm_rows_aligned(DType::bf16, 50257, 768));
  EXPECT_FALSE(gemm_rows_aligned(DType::f32, 4098, 768));
  // A CPU's library has no such kernels: its odd points are ordinary points, the nearest
  // neighbours of the aligned shape beside them.
  Profile c = fixture("fixture_cpu.json");
  Device& cpu = c.devices.at(0);
  const GemmShape cpu_odd{DType::f32, 64, 1001, 64, 1};
  cpu.gemm.push_back({cpu_odd, {cpu_odd.flops() / 1e9, cpu_odd.flops() / 1e9, 0.01, 10}, 1e9, "fixture", "row-major"});
  EXPECT_LT(RateModel(cpu, DType::f32).gemm_flops_per_s({1, 64, 1000, 64}), 2e9);
}

TEST(FixtureGpu, ARuntimeThatAddsAConvolutionsBiasApartPaysForTheAddition) {
  // x [N, 64, 56, 56] -> 3x3 convolution with a bias, and the same without one.
  const Profile p = fixture("fixture_gpu_conv.json");
  const Device& gpu = p.devices.at(0);
  const auto conv_model = [](bool bias) {
    GraphBuilder b;
    const auto& x = b.input("x", {Dim::symbol("N"), 64, 56, 56});
    b.add(make_conv2d("c", x, 64, {3, 3, 1, 1, 1, 1}, bias));
    Model m;
    m.name = "conv";
    m.forward = b.take();
    return m;
  };
  Options o = batch(32, DType::bf16);
  const auto fused = estimate(conv_model(true), gpu, o);
  o.own_rates = {{kConvBiasKind, 1e11}};
  const auto apart = estimate(conv_model(true), gpu, o);
  ASSERT_EQ(apart.ops.size(), fused.ops.size() + 1);
  const auto& add = apart.ops.back();
  EXPECT_EQ(add.kind, kConvBiasKind);
  const double out = 32.0 * 64 * 56 * 56;
  EXPECT_NEAR(add.compute_s, out / 1e11, 1e-12);
  EXPECT_DOUBLE_EQ(add.bytes, 2 * out * 2);  // the output read and written again, in bf16
  // Issued by the convolution's call: no issue time of its own, its kernel's time alone.
  EXPECT_DOUBLE_EQ(add.overhead_s, 0.0);
  EXPECT_DOUBLE_EQ(add.time_s, std::max(add.compute_s, add.memory_s));
  EXPECT_NEAR(apart.latency_s, fused.latency_s + add.time_s, 1e-12);
  // A convolution without a bias has nothing to add.
  EXPECT_EQ(estimate(conv_model(false), gpu, o).ops.size(), 1u);
}

TEST(FixtureGpu, IssueTimeOverlapsTheKernels) {
  // On a GPU an op costs the longer of its kernel and its issue time (fixture: 2.5 us per op).
  const Profile p = fixture("fixture_gpu_conv.json");
  const Device& gpu = p.devices.at(0);
  // A tiny ReLU: 4 KiB through HBM at 3e12 B/s is under 2 ns: the issue time is the whole op.
  const auto tiny = estimate(relu_model(1 << 10), gpu, batch(1, DType::bf16)).ops.at(0);
  EXPECT_DOUBLE_EQ(tiny.time_s, 2.5e-6);
  EXPECT_NEAR(tiny.overhead_s, 2.5e-6 - tiny.memory_s, 1e-15);
  // A large one: 2 x 2^26 bf16 elements, 256 MiB at 3e12 B/s = 89 us; the issue time hides.
  const auto big = estimate(relu_model(1 << 24), gpu, batch(4, DType::bf16)).ops.at(0);
  EXPECT_NEAR(big.time_s, big.bytes / 3e12, 1e-12);
  EXPECT_DOUBLE_EQ(big.overhead_s, 0);
  // The same op on a CPU pays both (FixtureCpu: work + 1 us).
  const Profile cpu_profile = fixture("fixture_cpu.json");
  const auto on_cpu = estimate(relu_model(1 << 10), cpu_profile.devices.at(0), batch(1)).ops.at(0);
  EXPECT_NEAR(on_cpu.time_s, on_cpu.memory_s + kOverhead, 1e-15);
}

TEST_F(FixtureCpu, TrainingStepHasRealBackwardShapes) {
  // Two linears: x[N,512] -> 1024 -> 256. The first layer's input needs no gradient.
  const Model m = two_linears("fc1", "fc2", 512, 1024, 256, false);
  Options o = batch(64);
  o.mode = Mode::training;
  o.optimizer = Optimizer::sgd;
  const auto est = estimate(m, cpu, o);
  std::vector<std::string> rows;
  for (const auto& r : est.ops) rows.push_back(r.phase + " " + r.name + " " + r.shape);
  const std::vector<std::string> expected = {
      "forward fc1 b1m64n1024k512", "forward fc2 b1m64n256k1024", "dgrad fc2 b1m64n1024k256",
      "wgrad fc2 b1m1024n256k64",   "wgrad fc1 b1m512n1024k64",   "optimizer sgd 786432 params"};
  EXPECT_EQ(rows, expected);
  ASSERT_TRUE(est.backward && est.optimizer_step);
  EXPECT_NEAR(est.latency_s, est.forward.time_s + est.backward->time_s + est.optimizer_step->time_s,
              1e-15);
  // SGD in f32 moves 12 bytes per parameter (read gradient, read and write the weight).
  EXPECT_DOUBLE_EQ(est.ops.back().bytes, 12.0 * 786432);
}

TEST_F(FixtureCpu, DecoderHasPrefillAndDecodeThatReadsTheCache) {
  const Model m =
      model_from_json_text(R"({"format": "truepeak-model", "name": "tiny", "transformer": {
      "architecture": "decoder", "layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "ffn": 128,
      "vocab": 100, "seq_len": 32, "norm": "rmsnorm", "position": "rope", "gated_mlp": true, "bias": false}})",
                           "tiny.json");
  Options o = batch(2);
  o.context = 1000;
  const auto est = estimate(m, cpu, o);
  ASSERT_TRUE(est.decode.has_value());
  EXPECT_NEAR(est.latency_s, est.forward.time_s, 1e-15);
  EXPECT_NEAR(est.throughput_per_s, 2 / est.decode->time_s, 1e-6);
  bool saw = false;
  for (const auto& r : est.ops)
    if (r.phase == "decode" && r.kind == "attention") {
      // q, new k and v, out ([2, 4|2, 1, 16]) plus the k and v caches [2, 2, 1000, 16], 4 bytes
      // each.
      EXPECT_DOUBLE_EQ(r.bytes,
                       (2 * 4 * 16 + 2 * 2 * 2 * 16 + 2 * 4 * 16 + 2 * 2 * 2 * 1000 * 16) * 4.0);
      saw = true;
    }
  EXPECT_TRUE(saw);
  // KV cache: 2 (k, v) x 2 layers x 2 kv heads x 16 dims x 1000 positions x 2 sequences x 4 bytes.
  EXPECT_DOUBLE_EQ(est.memory.kv_cache_bytes, 2.0 * 2 * 2 * 16 * 1000 * 2 * 4);
}

TEST_F(FixtureCpu, SweepPicksTheBestThroughputWithinTheLatencyLimit) {
  const Model m = linear_model(1024, 1024);
  const auto all = sweep_batch(m, cpu, batch(1), {1, 16, 256, 1024}, std::nullopt);
  ASSERT_EQ(all.rows.size(), 4u);
  ASSERT_TRUE(all.best.has_value());
  const double t256 = all.rows[2].latency_s;
  const auto limited = sweep_batch(m, cpu, batch(1), {1, 16, 256, 1024}, t256);
  ASSERT_TRUE(limited.best.has_value());
  EXPECT_LE(limited.rows[*limited.best].latency_s, t256);
  EXPECT_EQ(limited.rows[*limited.best].batch, 256);
}

}  // namespace
}  // namespace truepeak::estimate
