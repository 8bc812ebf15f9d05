// The layout changes of a runtime that keeps activations channel-blocked between the ops it runs
// in oneDNN (Options::blocked_layout), on the CPU fixture profile.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "helpers.hpp"

namespace truepeak::estimate {
namespace {

using testing::batch;
using testing::fixture;
using testing::two_linears;

class Layout : public ::testing::Test {
 protected:
  Profile profile = fixture("fixture_cpu.json");
  const Device& cpu = profile.devices.at(0);

  // x -> conv a -> silu -> conv b -> relu -> add(conv b's output, relu's) -> flatten.
  static Model model() {
    GraphBuilder b;
    const auto& x = b.input("x", {Dim::symbol("N"), 32, 8, 8});
    const auto& a = b.add(make_conv2d("a", x, 32, {3, 3, 1, 1, 1, 1}, false));
    const auto& s = b.add(make_elementwise("silu", "silu", {a}));
    const auto& c = b.add(make_conv2d("b", s, 32, {3, 3, 1, 1, 1, 1}, false));
    const auto& r = b.add(make_elementwise("relu", "relu", {c}));
    const auto& sum = b.add(make_elementwise("add", "add", {c, r}));
    b.add(make_reshape("flatten", sum, {Dim::symbol("N"), 32 * 8 * 8}));
    Model m;
    m.name = "layout";
    m.forward = b.take();
    return m;
  }

  // x (32 channels, 8x8) -> 1x1 conv a to `a_out` -> conv g to `g_out` (`g_attrs`) -> 1x1 conv out
  // to 32.
  static Model three_convs(std::int64_t a_out, std::int64_t g_out, const ConvAttrs& g_attrs,
                           const std::string& name) {
    GraphBuilder b;
    const auto& x = b.input("x", {Dim::symbol("N"), 32, 8, 8});
    const auto& a = b.add(make_conv2d("a", x, a_out, {1, 1, 1, 0, 1, 1}, false));
    const auto& g = b.add(make_conv2d("g", a, g_out, g_attrs, false));
    b.add(make_conv2d("out", g, 32, {1, 1, 1, 0, 1, 1}, false));
    Model m;
    m.name = name;
    m.forward = b.take();
    return m;
  }

  static std::vector<std::string> reorders(const Estimate& est) {
    std::vector<std::string> names;
    for (const auto& op : est.ops)
      if (op.kind.rfind("transpose:reorder_", 0) == 0) names.push_back(op.name);
    return names;
  }

  static Options layout(std::vector<std::string> ops, int to_plain = 1, int to_blocked = 1) {
    Options o = batch(2);
    BlockedLayout l;
    l.ops = std::move(ops);
    l.to_plain_copies = to_plain;
    l.to_blocked_copies = to_blocked;
    o.blocked_layout = l;
    return o;
  }

  static const OpRow& row(const Estimate& est, const std::string& name) {
    const auto it = std::find_if(est.ops.begin(), est.ops.end(),
                                 [&](const OpRow& op) { return op.name == name; });
    if (it == est.ops.end()) throw std::runtime_error("no row " + name);
    return *it;
  }

  // x -> conv a -> average pool over the whole 8x8 (a window pool) -> conv s (1x1) -> sigmoid; a *
  // sigmoid's output, the
  // broadcast [N, 32, 1, 1] scale of a squeeze-excitation block.
  static Model squeeze_excitation() {
    GraphBuilder b;
    const auto& x = b.input("x", {Dim::symbol("N"), 32, 8, 8});
    const auto& a = b.add(make_conv2d("a", x, 32, {3, 3, 1, 1, 1, 1}, false));
    const auto& p = b.add(make_pool("pool", "avg", a, {8, 8, 8, 0}));
    const auto& c = b.add(make_conv2d("s", p, 32, {1, 1, 1, 0, 1, 1}, false));
    const auto& g = b.add(make_elementwise("sigmoid", "sigmoid", {c}));
    const auto& m = b.add(make_elementwise("scale", "mul", {a, g}));
    b.add(make_conv2d("out", m, 32, {1, 1, 1, 0, 1, 1}, false));
    Model model;
    model.name = "se";
    model.forward = b.take();
    return model;
  }
};

TEST_F(Layout, WithoutALayoutModelNoOpIsAdded) {
  EXPECT_TRUE(reorders(estimate(model(), cpu, batch(2))).empty());
}

TEST_F(Layout, EachLayoutChangeIsAReorderBeforeTheOpThatNeedsIt) {
  // The image comes in plain; SiLU runs plain; ReLU and the add follow their blocked inputs;
  // the flatten (a view) needs the plain tensor.
  const auto est = estimate(model(), cpu, layout({"elementwise:relu", "elementwise:add"}));
  EXPECT_EQ(reorders(est), (std::vector<std::string>{
                               "a/x reorder_blocked", "silu/a reorder_plain",
                               "b/silu reorder_blocked", "flatten/add reorder_plain"}));
  // Without the add among the blocked ops it runs plain: both its inputs change layout once.
  const auto plain_add = estimate(model(), cpu, layout({"elementwise:relu"}));
  EXPECT_EQ(reorders(plain_add), (std::vector<std::string>{
                                     "a/x reorder_blocked", "silu/a reorder_plain",
                                     "b/silu reorder_blocked", "add/b reorder_plain",
                                     "add/relu reorder_plain"}));
  // A whole kind names all its functions.
  EXPECT_EQ(reorders(estimate(model(), cpu, layout({"elementwise"}))),
            (std::vector<std::string>{"a/x reorder_blocked", "flatten/add reorder_plain"}));
}

TEST_F(Layout, TheLaterCopiesOfAChangePayTheLibrarysCostPerKernelAlone) {
  // One runtime op makes both copies of a change to blocked: the first pays the runtime's
  // per-op overhead (here 20 us), the second the profile's (the library's, 1 us).
  Options o = layout({"elementwise:relu", "elementwise:add"}, 1, 2);
  o.op_overhead_s = 20e-6;
  const auto est = estimate(model(), cpu, o);
  EXPECT_DOUBLE_EQ(row(est, "a/x reorder_blocked 1/2").overhead_s, 20e-6);
  EXPECT_DOUBLE_EQ(row(est, "a/x reorder_blocked 2/2").overhead_s, 1e-6);
  EXPECT_DOUBLE_EQ(row(est, "silu/a reorder_plain").overhead_s, 20e-6);
  // A runtime cheaper per op than the library's figure charges its own on every copy.
  o.op_overhead_s = 0.5e-6;
  EXPECT_DOUBLE_EQ(row(estimate(model(), cpu, o), "a/x reorder_blocked 2/2").overhead_s, 0.5e-6);
}

TEST_F(Layout, AnOpRunsBlockedOnlyWhenAllItsInputsAre) {
  // The add meets ReLU's output, made plain by a runtime that runs ReLU outside oneDNN: it
  // runs plain and conv b's output changes layout for it.
  const auto est = estimate(model(), cpu, layout({"elementwise:add"}));
  const auto names = reorders(est);
  EXPECT_NE(std::find(names.begin(), names.end(), "relu/b reorder_plain"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "add/b reorder_plain"), names.end())
      << "conv b's output changed layout once, for the ReLU";
  EXPECT_EQ(std::find(names.begin(), names.end(), "flatten/add reorder_plain"), names.end());
}

TEST_F(Layout, AReorderCostsItsCopiesAtTheMeasuredRateOrItsBytes) {
  const auto one = estimate(model(), cpu, layout({"elementwise:relu", "elementwise:add"}));
  const auto two = estimate(model(), cpu, layout({"elementwise:relu", "elementwise:add"}, 1, 2));
  EXPECT_EQ(reorders(two).size(), reorders(one).size() + 2);  // the two plain-to-blocked changes
  EXPECT_GT(two.latency_s, one.latency_s);
  // A reorder reads and writes its tensor: 2 x 2 x 32 x 8 x 8 x 4 bytes.
  const OpRow* r = nullptr;
  for (const auto& op : one.ops)
    if (op.name == "silu/a reorder_plain") r = &op;
  ASSERT_NE(r, nullptr);
  EXPECT_DOUBLE_EQ(r->bytes, 2.0 * 2 * 32 * 8 * 8 * 4);
  EXPECT_EQ(r->shape, "[2,32,8,8]");

  // With a measured reorder rate the copy takes its elements at that rate.
  Device measured = cpu;
  measured.vector_ops.push_back(testing::vector_op_point("reorder_plain", DType::f32, 1e8));
  const auto slow = estimate(model(), measured, layout({"elementwise:relu", "elementwise:add"}));
  const OpRow* s = nullptr;
  for (const auto& op : slow.ops)
    if (op.name == "silu/a reorder_plain") s = &op;
  ASSERT_NE(s, nullptr);
  EXPECT_NEAR(s->compute_s, 2.0 * 32 * 8 * 8 / 1e8, 1e-15);
  EXPECT_GT(slow.latency_s, one.latency_s);
}

// x -> conv a (`channels` out) -> relu -> add(a, relu): a residual add of two blocked tensors.
Model residual(std::int64_t channels) {
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), 32, 8, 8});
  const auto& a = b.add(make_conv2d("a", x, channels, {3, 3, 1, 1, 1, 1}, false));
  const auto& r = b.add(make_elementwise("relu", "relu", {a}));
  b.add(make_elementwise("add", "add", {a, r}));
  Model m;
  m.name = "residual";
  m.forward = b.take();
  return m;
}

TEST_F(Layout, ABlockedAddOfPartFilledChannelBlocksTakesThePaddedAddsRate) {
  Device measured = cpu;
  measured.vector_ops.push_back(testing::vector_op_point("add", DType::f32, 1e10));
  measured.vector_ops.push_back(testing::vector_op_point("add_padded", DType::f32, 1e7));
  const auto blocked = layout({"elementwise:relu", "elementwise:add"});
  // No ISA flags in the fixture: blocks of 8 channels. 20 leave the last half full; 32 fill 4.
  EXPECT_NEAR(row(estimate(residual(20), measured, blocked), "add").compute_s, 2.0 * 20 * 64 / 1e7, 1e-15);
  EXPECT_NEAR(row(estimate(residual(32), measured, blocked), "add").compute_s, 2.0 * 32 * 64 / 1e10, 1e-15);
  // With AVX-512, blocks of 16: 24 channels leave the last one part-filled.
  Device avx512 = measured;
  avx512.properties["isa"] = {{"avx512f", true}};
  EXPECT_NEAR(row(estimate(residual(24), avx512, blocked), "add").compute_s, 2.0 * 24 * 64 / 1e7, 1e-15);
  EXPECT_NEAR(row(estimate(residual(24), measured, blocked), "add").compute_s, 2.0 * 24 * 64 / 1e10, 1e-15);
  // An add that runs plain is not oneDNN's sum of blocked tensors.
  EXPECT_NEAR(row(estimate(residual(20), measured, layout({"elementwise:relu"})), "add").compute_s,
              2.0 * 20 * 64 / 1e10, 1e-15);
  // A profile without the padded add's point lends it the add's rate.
  Device plain_add = cpu;
  plain_add.vector_ops.push_back(testing::vector_op_point("add", DType::f32, 1e10));
  EXPECT_NEAR(row(estimate(residual(20), plain_add, blocked), "add").compute_s, 2.0 * 20 * 64 / 1e10, 1e-15);
}

TEST_F(Layout, AnOpThatRunsPlainTakesTheRuntimesOwnRate) {
  Options o = layout({"elementwise:relu", "elementwise:add"});
  o.own_rates = {{"elementwise", 1e7}, {"elementwise:silu", 1e6}};
  const auto own = estimate(model(), cpu, o);
  const auto profile_rates = estimate(model(), cpu, layout({"elementwise:relu", "elementwise:add"}));
  // SiLU runs plain: its 2 x 32 x 8 x 8 outputs at its row kind's rate, which wins over the
  // whole kind's.
  EXPECT_NEAR(row(own, "silu").compute_s, 2.0 * 32 * 8 * 8 / 1e6, 1e-15);
  EXPECT_GT(row(own, "silu").compute_s, row(profile_rates, "silu").compute_s);
  // ReLU and the add run blocked, in the profile's library: unchanged.
  EXPECT_DOUBLE_EQ(row(own, "relu").time_s, row(profile_rates, "relu").time_s);
  EXPECT_DOUBLE_EQ(row(own, "add").time_s, row(profile_rates, "add").time_s);
  // Without ReLU among the blocked ops it runs plain and takes the whole kind's rate.
  Options relu_plain = layout({"elementwise:add"});
  relu_plain.own_rates = o.own_rates;
  EXPECT_NEAR(row(estimate(model(), cpu, relu_plain), "relu").compute_s, 2.0 * 32 * 8 * 8 / 1e7,
              1e-15);
  // A pool counts the elements of its windows: here 2 x 32 outputs of 8 x 8 each.
  Options pools = layout({"elementwise:sigmoid", "elementwise:mul"});
  pools.own_rates = {{"pool:avg", 1e3}};
  EXPECT_NEAR(row(estimate(squeeze_excitation(), cpu, pools), "pool").compute_s,
              2.0 * 32 * 64 / 1e3, 1e-12);
}

TEST_F(Layout, WithoutALayoutEveryOpOfAKindTakesTheRuntimesOwnRate) {
  Options o = batch(2);
  o.own_rates = {{"elementwise:silu", 1e6}, {"elementwise:add", 1e7}};
  const auto own = estimate(model(), cpu, o);
  const auto profile_rates = estimate(model(), cpu, batch(2));
  EXPECT_TRUE(reorders(own).empty());
  EXPECT_NEAR(row(own, "silu").compute_s, 2.0 * 32 * 8 * 8 / 1e6, 1e-15);
  EXPECT_NEAR(row(own, "add").compute_s, 2.0 * 32 * 8 * 8 / 1e7, 1e-15);
  // Its memory traffic still counts: the slower of the two sets the op's time.
  EXPECT_DOUBLE_EQ(row(own, "silu").memory_s, row(profile_rates, "silu").memory_s);
  EXPECT_GE(row(own, "silu").time_s, row(own, "silu").compute_s);
  // A kind without a rate, and the convolutions, keep the profile's figures.
  EXPECT_DOUBLE_EQ(row(own, "relu").time_s, row(profile_rates, "relu").time_s);
  EXPECT_DOUBLE_EQ(row(own, "a").time_s, row(profile_rates, "a").time_s);
  // A training step runs its own kernels, not these: unaffected.
  o.mode = Mode::training;
  Options train = batch(2);
  train.mode = Mode::training;
  EXPECT_DOUBLE_EQ(estimate(model(), cpu, o).latency_s, estimate(model(), cpu, train).latency_s);
}

TEST_F(Layout, AGlobalPoolIsAKindOfItsOwn) {
  // x [N, 32, 8, 8] -> 3x3 average pool (stride 1, pad 1) -> global average pool.
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), 32, 8, 8});
  const auto& window = b.add(make_pool("window", "avg", x, {3, 3, 1, 1, 1, 1}));
  b.add(make_pool("global", "avg", window, {0, 0, 1, 0, 1, 1}));
  Model m;
  m.name = "pools";
  m.forward = b.take();
  Options o = batch(2);
  o.own_rates = {{"pool:avg", 1e6}};
  const auto window_only = estimate(m, cpu, o);
  EXPECT_EQ(row(window_only, "window").kind, "pool:avg");
  EXPECT_EQ(row(window_only, "global").kind, "pool:global_avg");
  // 2 x 32 x 64 outputs of 9 window elements; the global pool keeps the profile's figures.
  EXPECT_NEAR(row(window_only, "window").compute_s, 2.0 * 32 * 64 * 9 / 1e6, 1e-12);
  EXPECT_DOUBLE_EQ(row(window_only, "global").time_s, row(estimate(m, cpu, batch(2)), "global").time_s);
  // Its own rate, over its window elements (the whole image: 2 x 32 outputs of 64).
  o.own_rates.push_back({"pool:global_avg", 1e8});
  EXPECT_NEAR(row(estimate(m, cpu, o), "global").compute_s, 2.0 * 32 * 64 / 1e8, 1e-12);
  // The whole kind takes both.
  o.own_rates = {{"pool", 1e6}};
  EXPECT_NEAR(row(estimate(m, cpu, o), "global").compute_s, 2.0 * 32 * 64 / 1e6, 1e-12);
}

TEST_F(Layout, ABroadcastOperandIsExpandedWhereTheRuntimeDoesSo) {
  Options o = layout({"pool", "elementwise:sigmoid", "elementwise:mul"}, 1, 2);
  const auto in_place = estimate(squeeze_excitation(), cpu, o);
  EXPECT_EQ(reorders(in_place), (std::vector<std::string>{"a/x reorder_blocked 1/2",
                                                          "a/x reorder_blocked 2/2"}));
  o.blocked_layout->expand_broadcast = true;
  const auto expanded = estimate(squeeze_excitation(), cpu, o);
  // The scale goes to plain at its own size, its expansion to blocked at the activation's.
  EXPECT_EQ(reorders(expanded),
            (std::vector<std::string>{"a/x reorder_blocked 1/2", "a/x reorder_blocked 2/2",
                                      "scale/sigmoid reorder_plain",
                                      "scale/sigmoid expanded reorder_blocked 1/2",
                                      "scale/sigmoid expanded reorder_blocked 2/2"}));
  EXPECT_EQ(row(expanded, "scale/sigmoid reorder_plain").shape, "[2,32,1,1]");
  EXPECT_EQ(row(expanded, "scale/sigmoid expanded reorder_blocked 2/2").shape, "[2,32,8,8]");
  EXPECT_GT(expanded.latency_s, in_place.latency_s);
  // The multiply itself still runs blocked: the next convolution needs no reorder.
  EXPECT_TRUE(std::none_of(expanded.ops.begin(), expanded.ops.end(),
                           [](const OpRow& op) { return op.name.rfind("out/", 0) == 0; }));
}

TEST_F(Layout, GroupedConvolutionsOfTheGivenWidthsReorderInAndOut) {
  // x -> conv a (32 channels) -> grouped 3x3 conv g -> conv out; g's groups of `width` channels.
  const auto net = [](std::int64_t groups) { return three_convs(32, 64, {3, 3, 2, 1, 1, groups}, "grouped"); };
  Options o = layout({"elementwise:relu"});
  o.blocked_layout->group_reorder_widths = {4, 8};
  const auto without = [](Options options) {
    options.blocked_layout->group_reorder_widths.clear();
    return options;
  };
  // Groups of 4 channels: the input reordered out at its size, the output back at its own.
  const auto fours = estimate(net(8), cpu, o);
  EXPECT_EQ(reorders(fours), (std::vector<std::string>{"a/x reorder_blocked", "g/a reorder_plain (group layout)",
                                                       "g/g reorder_blocked (group layout)"}));
  EXPECT_EQ(row(fours, "g/a reorder_plain (group layout)").shape, "[2,32,8,8]");
  EXPECT_EQ(row(fours, "g/g reorder_blocked (group layout)").shape, "[2,64,4,4]");
  EXPECT_GT(fours.latency_s, estimate(net(8), cpu, without(o)).latency_s);
  // Groups of 8 channels too; of 16, 2 (not among the widths) and depthwise: none.
  EXPECT_EQ(reorders(estimate(net(4), cpu, o)).size(), 3u);
  for (const std::int64_t groups : {2, 16, 32})
    EXPECT_EQ(reorders(estimate(net(groups), cpu, o)), (std::vector<std::string>{"a/x reorder_blocked"}))
        << groups << " groups";
  // A plain input (the graph's) goes straight to the convolution's layout: one reorder, not two.
  EXPECT_EQ(reorders(estimate(testing::one_conv_model(32, 8, 64, {3, 3, 2, 1, 1, 8}, "g"), cpu, o)),
            (std::vector<std::string>{"g/x reorder_plain (group layout)", "g/g reorder_blocked (group layout)"}));
}

TEST_F(Layout, ABroadcastMultiplyRunsPlainWhereTheRuntimeRunsItSo) {
  Options o = layout({"pool", "elementwise:sigmoid", "elementwise:mul"});
  o.blocked_layout->broadcast_plain = true;
  // The activation and the scale go to plain, each at its own size; the product comes back to
  // blocked for the next convolution.
  const auto est = estimate(squeeze_excitation(), cpu, o);
  EXPECT_EQ(reorders(est), (std::vector<std::string>{"a/x reorder_blocked", "scale/a reorder_plain",
                                                     "scale/sigmoid reorder_plain", "out/scale reorder_blocked"}));
  EXPECT_EQ(row(est, "scale/sigmoid reorder_plain").shape, "[2,32,1,1]");
  EXPECT_EQ(row(est, "out/scale reorder_blocked").shape, "[2,32,8,8]");
  // An elementwise op of same-shaped operands keeps running blocked.
  EXPECT_EQ(reorders(estimate(model(), cpu, layout({"elementwise:silu", "elementwise:relu", "elementwise:add"}))),
            reorders(estimate(model(), cpu, [&] {
              Options p = layout({"elementwise:silu", "elementwise:relu", "elementwise:add"});
              p.blocked_layout->broadcast_plain = true;
              return p;
            }())));
}

TEST_F(Layout, ConvolutionsTheChannelRuleLeavesOutRunPlainBetweenLayoutChanges) {
  // x (32 channels) -> 1x1 conv a to `c` -> depthwise 3x3 g over `c` -> 1x1 conv out to 32.
  const auto net = [](std::int64_t c) { return three_convs(c, c, {3, 3, 1, 1, 1, c}, "channels"); };
  Options o = layout({"elementwise:relu"});
  o.blocked_layout->conv_channel_multiple = 4;
  o.blocked_layout->conv_small_input_channels = 8;
  // 58 channels: the depthwise convolution and the 1x1 that reads its 58 channels run plain, a
  // change to plain before them; 60 channels all run blocked.
  EXPECT_EQ(reorders(estimate(net(58), cpu, o)), (std::vector<std::string>{"a/x reorder_blocked", "g/a reorder_plain"}));
  EXPECT_EQ(reorders(estimate(net(60), cpu, o)), (std::vector<std::string>{"a/x reorder_blocked"}));
  // A graph's image of 3 channels (at most 8) runs blocked; no rule: everything does.
  EXPECT_EQ(reorders(estimate(testing::one_conv_model(3, 8, 58, {3, 3, 1, 1, 1, 1}, "c"), cpu, o)),
            (std::vector<std::string>{"c/x reorder_blocked"}));
  o.blocked_layout->conv_channel_multiple = 1;
  EXPECT_EQ(reorders(estimate(net(58), cpu, o)), (std::vector<std::string>{"a/x reorder_blocked"}));
}

TEST(BlockedLayoutRule, DenseDepthwiseAndGrouped) {
  BlockedLayout l;
  EXPECT_TRUE(l.conv_runs_blocked(58, 58, 58));  // no rule
  l.conv_channel_multiple = 4;
  l.conv_small_input_channels = 8;
  EXPECT_TRUE(l.conv_runs_blocked(3, 64, 1));
  EXPECT_TRUE(l.conv_runs_blocked(60, 58, 1));  // the output's channels are padded, not ruled
  EXPECT_FALSE(l.conv_runs_blocked(58, 64, 1));
  EXPECT_FALSE(l.conv_runs_blocked(6, 6, 6));  // a depthwise one of few channels too
  EXPECT_TRUE(l.conv_runs_blocked(8, 8, 8));
  EXPECT_TRUE(l.conv_runs_blocked(58, 58, 2));    // grouped: group_reorder_widths decides
  EXPECT_TRUE(l.conv_runs_blocked(58, 116, 58));  // two outputs a group: grouped, not depthwise
}

TEST_F(Layout, TrainingIsNotAffected) {
  Options o = layout({"elementwise:relu"});
  o.mode = Mode::training;
  Options plain = batch(2);
  plain.mode = Mode::training;
  EXPECT_DOUBLE_EQ(estimate(model(), cpu, o).latency_s, estimate(model(), cpu, plain).latency_s);
}

TEST_F(Layout, ARuntimeThatCopiesALinearsBiasFirstPaysForTheCopy) {
  // x [N, 64] -> linear with a bias to 128 -> linear without one to 32.
  const Model m = two_linears("up", "down", 64, 128, 32, true);
  const auto fused = estimate(m, cpu, batch(2));
  Options o = batch(2);
  o.own_rates = {{kBiasFillKind, 1e6}};
  const auto copied = estimate(m, cpu, o);
  // One more row, the copy of the bias into the 2 x 128 outputs at the given rate; only the
  // linear with a bias has one.
  ASSERT_EQ(copied.ops.size(), fused.ops.size() + 1);
  std::vector<const OpRow*> fills;
  for (const auto& op : copied.ops)
    if (op.kind == kBiasFillKind) fills.push_back(&op);
  ASSERT_EQ(fills.size(), 1u);
  EXPECT_EQ(fills[0]->name, "up");
  EXPECT_NEAR(fills[0]->compute_s, 2.0 * 128 / 1e6, 1e-15);
  EXPECT_GT(copied.latency_s, fused.latency_s + 2.0 * 128 / 1e6 * 0.99);
  // A runtime that runs its linears as convolutions folds the bias into the kernel.
  o.linears_as_convolutions = true;
  Options convs = batch(2);
  convs.linears_as_convolutions = true;
  EXPECT_EQ(estimate(m, cpu, o).ops.size(), estimate(m, cpu, convs).ops.size());
}

TEST_F(Layout, ARuntimeThatRunsItsMatmulsInItsOwnKernelsTakesTheirRate) {
  // x [N, 64] -> linear to 64 (the weight a parameter) -> y = h x h^T, a product of activations.
  GraphBuilder gb;
  const auto& x = gb.input("x", {Dim::symbol("N"), 64});
  const auto& h = gb.add(make_linear("fc", x, 64, false));
  gb.add(make_matmul("scores", h, h, false, true));
  Model m;
  m.name = "scores";
  m.forward = gb.take();
  const auto library = estimate(m, cpu, batch(4));
  Options o = batch(4);
  o.own_rates = {{"matmul", 1e6}};
  const auto own = estimate(m, cpu, o);
  ASSERT_EQ(own.ops.size(), 2u);
  // The product of activations (4 x 64 by 64 x 4) at the given rate; the linear keeps the
  // profile's GEMM points.
  EXPECT_EQ(own.ops[1].kind, "matmul");
  EXPECT_NEAR(own.ops[1].compute_s, 2.0 * 4 * 4 * 64 / 1e6, 1e-12);
  EXPECT_DOUBLE_EQ(own.ops[0].compute_s, library.ops[0].compute_s);
  EXPECT_GT(own.ops[1].compute_s, library.ops[1].compute_s * 10);
}

TEST_F(Layout, ARuntimeThatDispatchesProductsAtACostOfItsOwnChargesItPerProduct) {
  // x [N, 64] -> linear (with a bias, copied into the output at its own rate) -> relu -> y = h h^T.
  GraphBuilder gb;
  const auto& x = gb.input("x", {Dim::symbol("N"), 64});
  const auto& h = gb.add(make_linear("fc", x, 64, true));
  const auto& r = gb.add(make_elementwise("relu", "relu", {h}));
  gb.add(make_matmul("scores", r, r, false, true));
  Model m;
  m.name = "dispatch";
  m.forward = gb.take();
  Options o = batch(4);
  o.op_overhead_s = 4e-6;
  o.own_rates = {{kBiasFillKind, 1e9}};
  const auto plain = estimate(m, cpu, o);
  o.kind_overheads = {{"linear", 20e-6}, {"matmul", 30e-6}};
  const auto own = estimate(m, cpu, o);
  ASSERT_EQ(own.ops.size(), plain.ops.size());
  for (std::size_t i = 0; i < own.ops.size(); ++i) {
    const auto& row = own.ops[i];
    // The linear's product and the matmul take their kinds' costs; the relu keeps the per-op
    // overhead, and the bias copy, a kernel within the linear, the library's alone.
    const double want = row.kind == "linear" ? 20e-6
                        : row.kind == "matmul" ? 30e-6
                                               : plain.ops[i].overhead_s;
    EXPECT_DOUBLE_EQ(row.overhead_s, want) << row.kind;
    EXPECT_DOUBLE_EQ(row.compute_s, plain.ops[i].compute_s) << row.kind;
  }
  EXPECT_NEAR(own.latency_s - plain.latency_s, (20e-6 - 4e-6) + (30e-6 - 4e-6), 1e-12);
  EXPECT_TRUE(std::any_of(own.ops.begin(), own.ops.end(),
                          [](const OpRow& row) { return row.kind == kBiasFillKind; }));
}

TEST_F(Layout, ColdCallsCostWhereThePassOutgrowsTheCaches) {
  // x [N, 64] -> linear 64 -> relu -> linear 64: 16 KiB of weights each, the pass's activations
  // 1 KiB a row. At batch 2 the pass fits the fixture's 1 MiB cache; at batch 4096 it writes 3 MiB.
  GraphBuilder gb;
  const auto& x = gb.input("x", {Dim::symbol("N"), 64});
  const auto& h = gb.add(make_linear("fc1", x, 64, false));
  const auto& r = gb.add(make_elementwise("relu", "relu", {h}));
  gb.add(make_linear("fc2", r, 64, false));
  Model m;
  m.name = "cold";
  m.forward = gb.take();
  for (const std::int64_t n : {2, 4096}) {
    Options o = batch(n);
    o.op_overhead_s = 4e-6;
    o.kind_overheads = {{"linear", 20e-6}};
    const auto warm = estimate(m, cpu, o);
    o.cold_calls = ColdCalls{30e-6, {{"linear", 50e-6}}};
    const auto cold = estimate(m, cpu, o);
    const bool outgrows = n == 4096;
    ASSERT_EQ(cold.ops.size(), warm.ops.size());
    for (std::size_t i = 0; i < cold.ops.size(); ++i) {
      const auto& row = cold.ops[i];
      // A cold pass: the linears take their kind's cold cost, the relu the plain op's.
      const double want = !outgrows ? warm.ops[i].overhead_s : row.kind == "linear" ? 50e-6 : 30e-6;
      EXPECT_DOUBLE_EQ(row.overhead_s, want) << row.kind << " at batch " << n;
      EXPECT_DOUBLE_EQ(row.compute_s, warm.ops[i].compute_s) << row.kind;
    }
    EXPECT_NEAR(cold.latency_s - warm.latency_s, outgrows ? 2 * (50e-6 - 20e-6) + (30e-6 - 4e-6) : 0.0, 1e-12)
        << n;
  }
}

TEST_F(Layout, ARuntimeThatDispatchesViewsPaysForEach) {
  // x [N, 64] -> linear to 64 -> a view to [N, 8, 8] -> a view back -> relu.
  GraphBuilder gb;
  const auto& x = gb.input("x", {Dim::symbol("N"), 64});
  const auto& h = gb.add(make_linear("fc", x, 64, false));
  const auto& v = gb.add(make_reshape("heads", h, {Dim::symbol("N"), 8, 8}));
  const auto& back = gb.add(make_reshape("merge", v, {Dim::symbol("N"), 64}));
  gb.add(make_elementwise("relu", "relu", {back}));
  Model m;
  m.name = "views";
  m.forward = gb.take();
  Options o = batch(4);
  o.op_overhead_s = 4e-6;
  const auto free_views = estimate(m, cpu, o);
  o.kind_overheads = {{"reshape", 1.5e-6}};
  const auto dispatched = estimate(m, cpu, o);
  // Two more rows, the views, each its dispatch alone; the other rows unchanged.
  ASSERT_EQ(dispatched.ops.size(), free_views.ops.size() + 2);
  int views = 0;
  for (const auto& row : dispatched.ops) {
    if (row.kind.rfind("reshape", 0) != 0) continue;
    ++views;
    EXPECT_DOUBLE_EQ(row.time_s, 1.5e-6);
    EXPECT_DOUBLE_EQ(row.bytes, 0);
  }
  EXPECT_EQ(views, 2);
  EXPECT_NEAR(dispatched.latency_s - free_views.latency_s, 3e-6, 1e-15);
}

TEST_F(Layout, InPlaceOpsCostTheirReadsAtTheInPlaceBandwidth) {
  // In model(): silu reads conv a's output, which nothing else reads; relu reads conv b's, which
  // the add reads too; the add reads relu's output (nothing else does) and conv b's.
  const Model m = model();
  Device d = cpu;
  // Far above the fixture's triad figures, so that the in-place time is the lower.
  d.memory_in_place_levels = {{"DRAM", std::nullopt, 1e15}};
  const double tensor = 2.0 * 32 * 8 * 8 * 4;  // one activation at batch 2, f32
  const auto plain = estimate(m, d, batch(2));
  Options o = batch(2);
  o.in_place_ops = {"elementwise"};
  const auto in_place = estimate(m, d, o);
  // silu: its input read, twice its bytes at the in-place bandwidth.
  EXPECT_DOUBLE_EQ(row(in_place, "silu").memory_s, 2 * tensor / 1e15);
  // relu: its input has another reader, so it writes a buffer of its own.
  EXPECT_DOUBLE_EQ(row(in_place, "relu").memory_s, row(plain, "relu").memory_s);
  // add: over relu's output; both inputs read.
  EXPECT_DOUBLE_EQ(row(in_place, "add").memory_s, 2 * 2 * tensor / 1e15);
  // Only the kinds named.
  o.in_place_ops = {"elementwise:add"};
  const auto adds = estimate(m, d, o);
  EXPECT_DOUBLE_EQ(row(adds, "silu").memory_s, row(plain, "silu").memory_s);
  EXPECT_DOUBLE_EQ(row(adds, "add").memory_s, 2 * 2 * tensor / 1e15);
  // Never above what the op costs out of place: an in-place bandwidth below the triad's (inside
  // L1 here) leaves the op as it was.
  d.memory_in_place_levels = {{"DRAM", std::nullopt, 1e3}};
  EXPECT_DOUBLE_EQ(estimate(m, d, o).latency_s, estimate(m, d, batch(2)).latency_s);
  // A profile without in-place levels (before 1.10, or a GPU's) costs them as before.
  o.in_place_ops = {"elementwise"};
  EXPECT_DOUBLE_EQ(estimate(m, cpu, o).latency_s, estimate(m, cpu, batch(2)).latency_s);
}

TEST_F(Layout, AnOpOverAGraphInputOrAViewWithOtherReadersRunsOutOfPlace) {
  // x -> relu (a graph input: the caller's buffer); x -> conv -> flatten (a view) -> relu and
  // the view's source is read again by a second relu.
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), 8, 4, 4});
  b.add(make_elementwise("on_input", "relu", {x}));
  const auto& c = b.add(make_conv2d("c", x, 8, {1, 1, 1, 0, 1, 1}, false));
  const auto& v = b.add(make_reshape("view", c, {Dim::symbol("N"), 8 * 4 * 4}));
  b.add(make_elementwise("on_view", "relu", {v}));
  b.add(make_elementwise("on_source", "sigmoid", {c}));
  Model m;
  m.name = "aliases";
  m.forward = b.take();
  Device d = cpu;
  d.memory_in_place_levels = {{"DRAM", std::nullopt, 1e15}};
  const auto plain = estimate(m, d, batch(2));
  Options o = batch(2);
  o.in_place_ops = {"elementwise"};
  const auto est = estimate(m, d, o);
  for (const char* name : {"on_input", "on_view", "on_source"})
    EXPECT_DOUBLE_EQ(row(est, name).memory_s, row(plain, name).memory_s) << name;
}

}  // namespace
}  // namespace truepeak::estimate
