// The zoo against the published parameter and multiply-add counts.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "estimate/cost.hpp"
#include "estimate/estimator.hpp"

namespace truepeak::estimate {
namespace {

// Multiply-adds of the GEMM-like ops (conv, linear, matmul, attention) of one sample.
double macs(const Model& m) {
  Bindings b = m.defaults;
  b.emplace_back("N", 1);
  b.emplace_back("T", 1);
  double total = 0;
  for (const auto& op : m.forward.ops)
    for (const auto& w : forward_work(op, b, 4))
      for (const auto& [shape, flops] : w.products) total += flops / 2;
  return total;
}

double params(const Model& m) {
  Bindings b = m.defaults;
  b.emplace_back("N", 1);
  b.emplace_back("T", 1);
  return count_params(m.forward, b);
}

struct Published {
  const char* name;
  double params;
  double params_tolerance;  // relative
  double macs;              // 0: not checked
};

class ZooCounts : public ::testing::TestWithParam<Published> {};

TEST_P(ZooCounts, MatchPublishedFigures) {
  const auto& p = GetParam();
  const Model m = load_model(p.name);
  EXPECT_NEAR(params(m), p.params, p.params * p.params_tolerance) << p.name;
  if (p.macs > 0) {
    EXPECT_NEAR(macs(m), p.macs, p.macs * 0.015) << p.name;
  }
  // The file's own reference agrees with the published figure we hold it to.
  ASSERT_TRUE(m.reference_params.has_value()) << p.name;
}

INSTANTIATE_TEST_SUITE_P(Published, ZooCounts,
                         ::testing::Values(Published{"resnet18", 11.69e6, 0.001, 1.81e9},
                                           Published{"resnet50", 25.557e6, 0.001, 4.09e9},
                                           Published{"mobilenet_v2", 3.505e6, 0.001, 0.30e9},
                                           Published{"vgg16", 138.358e6, 0.001, 15.47e9},
                                           Published{"vit_b16", 86.57e6, 0.002, 17.56e9},
                                           Published{"bert_base", 110e6, 0.01, 0},
                                           Published{"gpt2", 124e6, 0.01, 0},
                                           Published{"llama2_7b", 6.74e9, 0.002, 0}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Zoo, ListsEveryModelWithCounts) {
  const auto zoo = list_zoo();
  ASSERT_GE(zoo.size(), 8u);
  for (const auto& e : zoo) {
    EXPECT_GT(e.params, 0) << e.name;
    EXPECT_GT(e.forward_flops, 0) << e.name;
    EXPECT_FALSE(e.kind.empty()) << e.name;
  }
}

TEST(Zoo, NamesAreMatchedLoosely) {
  EXPECT_EQ(load_model("ResNet-50").name, "resnet50");
  EXPECT_EQ(load_model("Llama2_7B").name, "llama2_7b");
}

TEST(Zoo, DecodersHaveADecodeStepReadingTheKvCache) {
  const Model m = load_model("llama2_7b");
  ASSERT_TRUE(m.decode.has_value());
  int cache_reads = 0;
  for (const auto& op : m.decode->ops) cache_reads += static_cast<int>(op.state.size());
  EXPECT_EQ(cache_reads, 2 * 32);  // k and v of every layer
  EXPECT_FALSE(load_model("bert_base").decode.has_value());
}

TEST(Zoo, EachTransformerUsesItsOwnGeluForm) {
  // GPT-2's MLP uses GELU's tanh form, BERT's the erf form: each is timed by its own measured op.
  const auto activations = [](const std::string& name) {
    std::set<std::string> fns;
    for (const auto& op : load_model(name).forward.ops)
      if (op.kind == OpKind::elementwise && op.fn.rfind("gelu", 0) == 0) fns.insert(op.fn);
    return fns;
  };
  EXPECT_EQ(activations("gpt2"), std::set<std::string>{"gelu_tanh"});
  EXPECT_EQ(activations("bert_base"), std::set<std::string>{"gelu"});
}

}  // namespace
}  // namespace truepeak::estimate
