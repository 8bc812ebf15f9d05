// A runtime's fusion rules (Options::fusion): which ops run as one kernel, what that kernel costs,
// and the compiled graph's call once a pass, on the CPU fixture profile.
#include "estimate/fusion.hpp"

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

constexpr std::int64_t kWidth = 1 << 16;

FusionRules rules(bool pointwise, bool into_reductions, bool into_products, double graph_s = 0) {
  return {pointwise, into_reductions, into_products, graph_s};
}

Model model_of(Graph g, const std::string& name) {
  Model m;
  m.name = name;
  m.forward = std::move(g);
  return m;
}

// x -> relu a -> add b (a + x) -> relu c: each intermediate read once.
Model chain_model() {
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), kWidth});
  const auto& a = b.add(make_elementwise("a", "relu", {x}));
  const auto& s = b.add(make_elementwise("b", "add", {a, x}));
  b.add(make_elementwise("c", "relu", {s}));
  return model_of(b.take(), "chain");
}

// The names of the kernels of `m` under `r`, each its ops joined by '+'.
std::vector<std::string> kernel_names(const Model& m, const FusionRules& r) {
  const auto fused = fuse(m.forward, r);
  std::vector<std::string> names;
  for (const auto& k : fused.kernels) {
    std::string name;
    for (const auto i : k.ops) name += (name.empty() ? "" : "+") + m.forward.ops[i].name;
    names.push_back(name);
  }
  return names;
}

using Names = std::vector<std::string>;

class Fusion : public ::testing::Test {
 protected:
  Profile profile = fixture("fixture_cpu.json");
  const Device& cpu = profile.devices.at(0);

  Estimate run(const Model& m, std::optional<FusionRules> r, std::int64_t n = 2) const {
    Options o = batch(n);
    o.fusion = r;
    return estimate(m, cpu, o);
  }

  static const OpRow& row(const Estimate& est, const std::string& name) {
    const auto it = std::find_if(est.ops.begin(), est.ops.end(),
                                 [&](const OpRow& op) { return op.name == name; });
    if (it == est.ops.end()) throw std::runtime_error("no row " + name);
    return *it;
  }
};

TEST_F(Fusion, ChainOfSingleReadersIsOneKernelMovingOnlyItsOutsideBytes) {
  const Model m = chain_model();
  EXPECT_EQ(kernel_names(m, rules(true, false, false)), (Names{"a+b+c"}));
  const auto alone = run(m, std::nullopt);
  const auto fused = run(m, rules(true, false, false));
  ASSERT_EQ(alone.ops.size(), 3u);
  ASSERT_EQ(fused.ops.size(), 1u);
  const OpRow& k = fused.ops[0];
  EXPECT_EQ(k.name, "a+b+c");
  EXPECT_EQ(k.kind, "elementwise:relu");
  EXPECT_EQ(k.fused, (Names{"a", "b", "c"}));
  // x read once (by two of its ops) and the output written once, in f32.
  const double tensor = 2.0 * kWidth * 4;
  EXPECT_DOUBLE_EQ(k.bytes, 2 * tensor);
  double flops = 0, time = 0, overhead = 0;
  for (const auto& r : alone.ops) {
    flops += r.flops;
    time += r.time_s;
    overhead = r.overhead_s;
  }
  EXPECT_NEAR(k.flops, flops, 1e-9 * flops);
  EXPECT_DOUBLE_EQ(k.overhead_s, overhead);  // one op's
  EXPECT_LT(k.time_s, time);
  EXPECT_DOUBLE_EQ(fused.latency_s, k.time_s);
  // The kernel is no faster than its slowest op alone, nor than its own bytes allow.
  for (const auto& r : alone.ops) EXPECT_GE(k.compute_s, r.compute_s);
  EXPECT_GE(k.time_s, k.memory_s + k.overhead_s);
  ASSERT_TRUE(fused.fusion.has_value());
  EXPECT_EQ(fused.fusion->forward.kernels, 1);
  EXPECT_EQ(fused.fusion->forward.ops, 3);
  EXPECT_FALSE(fused.fusion->decode.has_value());
  EXPECT_FALSE(alone.fusion.has_value());
  // Without the pointwise rule every op stays apart.
  EXPECT_EQ(run(m, rules(false, true, true)).ops.size(), 3u);
}

TEST_F(Fusion, AnIntermediateReadTwiceSplitsTheChain) {
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), kWidth});
  const auto& a = b.add(make_elementwise("a", "relu", {x}));
  const auto& s = b.add(make_elementwise("s", "sigmoid", {a}));
  b.add(make_elementwise("m", "mul", {a, s}));
  const Model m = model_of(b.take(), "split");
  EXPECT_EQ(kernel_names(m, rules(true, true, true)), (Names{"a", "s+m"}));
  const auto est = run(m, rules(true, true, true));
  ASSERT_EQ(est.ops.size(), 2u);
  EXPECT_TRUE(row(est, "a").fused.empty());
  // s+m reads a (twice, once from memory) and writes its output.
  EXPECT_DOUBLE_EQ(row(est, "s+m").bytes, 2 * 2.0 * kWidth * 4);
  EXPECT_EQ(est.fusion->forward.kernels, 1);
  EXPECT_EQ(est.fusion->forward.ops, 2);
}

TEST_F(Fusion, AViewBetweenOpsIsNoReader) {
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), kWidth});
  const auto& a = b.add(make_elementwise("a", "relu", {x}));
  const auto& v = b.add(make_reshape("v", a, {Dim::symbol("N"), 256, 256}));
  b.add(make_elementwise("c", "gelu", {v}));
  const Model m = model_of(b.take(), "view");
  EXPECT_EQ(kernel_names(m, rules(true, false, false)), (Names{"a+c", "v"}));
}

TEST_F(Fusion, AProductTakesAnEpilogueOnlyWithIntoProducts) {
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), 1024});
  const auto& h = b.add(make_linear("fc1", x, 1024, true));
  const auto& r = b.add(make_elementwise("relu", "relu", {h}));
  const auto& y = b.add(make_linear("fc2", r, 1024, false));
  b.add(make_elementwise("add", "add", {y, x}));
  const Model m = model_of(b.take(), "mlp");
  EXPECT_EQ(kernel_names(m, rules(true, true, false)), (Names{"fc1", "relu", "fc2", "add"}));
  // Never a second product in one kernel.
  EXPECT_EQ(kernel_names(m, rules(true, true, true)), (Names{"fc1+relu", "fc2+add"}));
  const auto alone = run(m, std::nullopt, 64);
  const auto fused = run(m, rules(true, true, true), 64);
  ASSERT_EQ(fused.ops.size(), 2u);
  const OpRow& k = row(fused, "fc1+relu");
  EXPECT_EQ(k.kind, "linear");
  EXPECT_EQ(k.shape, row(alone, "fc1").shape);
  // The product's inputs, weights and bias, and the relu's output: the product's bytes alone.
  EXPECT_DOUBLE_EQ(k.bytes, row(alone, "fc1").bytes);
  EXPECT_DOUBLE_EQ(k.flops, row(alone, "fc1").flops + row(alone, "relu").flops);
  EXPECT_DOUBLE_EQ(k.overhead_s, row(alone, "fc1").overhead_s);
  EXPECT_LT(k.time_s, row(alone, "fc1").time_s + row(alone, "relu").time_s);
  EXPECT_GE(k.time_s, row(alone, "fc1").compute_s);
  EXPECT_LT(fused.latency_s, alone.latency_s);
}

TEST_F(Fusion, ANormTakesAPrologueAndAnEpilogueWithIntoReductions) {
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), 64, 256});
  const auto& s = b.add(make_elementwise("scale", "scale", {x}));
  const auto& p = b.add(make_softmax("softmax", s));
  const auto& d = b.add(make_elementwise("drop", "dropout", {p}));
  const auto& n = b.add(make_norm("ln", "layernorm", d));
  b.add(make_elementwise("gelu", "gelu", {n}));
  const Model m = model_of(b.take(), "attention scores");
  EXPECT_EQ(kernel_names(m, rules(true, false, true)), (Names{"scale", "softmax", "drop", "ln", "gelu"}));
  // The softmax takes the scale in and the dropout after it; never a second reduction.
  EXPECT_EQ(kernel_names(m, rules(false, true, false)), (Names{"scale+softmax+drop", "ln+gelu"}));
  const auto alone = run(m, std::nullopt);
  const auto fused = run(m, rules(false, true, false));
  ASSERT_EQ(fused.ops.size(), 2u);
  const OpRow& k = row(fused, "scale+softmax+drop");
  EXPECT_EQ(k.kind, "softmax");
  EXPECT_DOUBLE_EQ(k.bytes, 2 * 2.0 * 64 * 256 * 4);
  EXPECT_DOUBLE_EQ(k.overhead_s, row(alone, "softmax").overhead_s);
  EXPECT_EQ(row(fused, "ln+gelu").kind, "norm:layernorm");
  EXPECT_EQ(fused.fusion->forward.kernels, 2);
  EXPECT_EQ(fused.fusion->forward.ops, 5);
}

TEST_F(Fusion, TheGraphOutputAndGraphInputsStayOutside) {
  // The last op's output is the graph's: nothing joins a kernel through it, and an op that reads
  // only graph inputs starts a kernel.
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), kWidth});
  const auto& y = b.input("y", {Dim::symbol("N"), kWidth});
  b.add(make_elementwise("a", "add", {x, y}));
  const Model m = model_of(b.take(), "one");
  EXPECT_EQ(kernel_names(m, rules(true, true, true)), (Names{"a"}));
  const auto est = run(m, rules(true, true, true));
  EXPECT_EQ(est.fusion->forward.kernels, 0);
  EXPECT_TRUE(est.ops[0].fused.empty());
}

TEST_F(Fusion, TheGraphCallIsChargedOncePerPass) {
  const auto pass = [] {
    GraphBuilder b;
    const auto& x = b.input("x", {Dim::symbol("N"), kWidth});
    const auto& a = b.add(make_elementwise("a", "relu", {x}));
    b.add(make_elementwise("c", "gelu", {a}));
    return b.take();
  };
  Model m = model_of(pass(), "decoder");
  m.decode = pass();
  const double graph_s = 1.5e-5;
  const auto alone = run(m, std::nullopt);
  const auto fused = run(m, rules(false, false, false, graph_s));
  std::vector<std::string> phases;
  for (const auto& r : fused.ops) {
    if (r.kind != "graph") continue;
    phases.push_back(r.phase);
    EXPECT_EQ(r.name, "compiled graph call");
    EXPECT_DOUBLE_EQ(r.overhead_s, graph_s);
    EXPECT_DOUBLE_EQ(r.time_s, graph_s);
  }
  EXPECT_EQ(phases, (Names{"prefill", "decode"}));
  EXPECT_EQ(fused.ops.size(), alone.ops.size() + 2);
  EXPECT_NEAR(fused.forward.time_s, alone.forward.time_s + graph_s, 1e-15);
  EXPECT_NEAR(fused.decode->time_s, alone.decode->time_s + graph_s, 1e-15);
  EXPECT_NEAR(fused.forward.overhead_s, alone.forward.overhead_s + graph_s, 1e-15);
  ASSERT_TRUE(fused.fusion->decode.has_value());
  EXPECT_EQ(fused.fusion->decode->kernels, 0);
  EXPECT_DOUBLE_EQ(fused.fusion->graph_s, graph_s);
  // With the pointwise rule each pass runs one kernel.
  const auto both = run(m, rules(true, false, false, graph_s));
  EXPECT_EQ(both.fusion->forward.ops, 2);
  EXPECT_EQ(both.fusion->decode->ops, 2);
  EXPECT_EQ(both.ops.size(), 4u);  // a call and a kernel a pass
}

TEST_F(Fusion, RulesThatFuseNothingLeaveEveryRowAsItWas) {
  for (const char* name : {"resnet50", "gpt2", "mobilenet_v2"}) {
    const Model m = load_model(name);
    const auto alone = run(m, std::nullopt, 1);
    const auto inert = run(m, rules(false, false, false), 1);
    ASSERT_EQ(alone.ops.size(), inert.ops.size()) << name;
    for (std::size_t i = 0; i < alone.ops.size(); ++i) {
      EXPECT_EQ(alone.ops[i].name, inert.ops[i].name) << name;
      EXPECT_EQ(alone.ops[i].time_s, inert.ops[i].time_s) << name << " " << alone.ops[i].name;
      EXPECT_EQ(alone.ops[i].bytes, inert.ops[i].bytes) << name << " " << alone.ops[i].name;
    }
    EXPECT_EQ(alone.latency_s, inert.latency_s) << name;
    EXPECT_EQ(alone.memory.total_bytes, inert.memory.total_bytes) << name;
  }
}

TEST_F(Fusion, ZooModelsRunFewerKernelsInLessTime) {
  for (const char* name : {"resnet50", "gpt2", "bert_base"}) {
    const Model m = load_model(name);
    const auto alone = run(m, std::nullopt, 1);
    const auto fused = run(m, rules(true, true, true), 1);
    ASSERT_TRUE(fused.fusion.has_value());
    EXPECT_GT(fused.fusion->forward.kernels, 0) << name;
    EXPECT_EQ(alone.ops.size() - fused.ops.size(),
              static_cast<std::size_t>(fused.fusion->forward.ops - fused.fusion->forward.kernels) +
                  (fused.fusion->decode ? static_cast<std::size_t>(fused.fusion->decode->ops -
                                                                   fused.fusion->decode->kernels)
                                        : 0))
        << name;
    EXPECT_LT(fused.latency_s, alone.latency_s) << name;
    EXPECT_LT(fused.forward.bytes, alone.forward.bytes) << name;
    EXPECT_NEAR(fused.forward.flops, alone.forward.flops, 1e-9 * alone.forward.flops) << name;
  }
}

TEST_F(Fusion, TrainingIgnoresTheRules) {
  const Model m = chain_model();
  Options o = batch(2);
  o.mode = Mode::training;
  const auto plain = estimate(m, cpu, o);
  o.fusion = rules(true, true, true, 1e-5);
  const auto with_rules = estimate(m, cpu, o);
  EXPECT_FALSE(with_rules.fusion.has_value());
  EXPECT_EQ(plain.latency_s, with_rules.latency_s);
  EXPECT_EQ(plain.ops.size(), with_rules.ops.size());
}

}  // namespace
}  // namespace truepeak::estimate
