#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/stats.hpp"

namespace truepeak {
namespace {

TEST(Summarize, MinMedianMeanCv) {
  const std::vector<double> s = {3, 1, 2, 5, 4};
  const auto sum = summarize(s);
  EXPECT_EQ(sum.samples, 5);
  EXPECT_DOUBLE_EQ(sum.min_s, 1);
  EXPECT_DOUBLE_EQ(sum.max_s, 5);
  EXPECT_DOUBLE_EQ(sum.median_s, 3);
  EXPECT_DOUBLE_EQ(sum.typical_s, 3);  // one look: its median
  EXPECT_DOUBLE_EQ(sum.mean_s, 3);
  EXPECT_NEAR(sum.cv, std::sqrt(2.5) / 3, 1e-12);
}

TEST(Summarize, EvenCountMedianAveragesTheMiddlePair) {
  const std::vector<double> s = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(summarize(s).median_s, 2.5);
}

TEST(Summarize, SingleSampleHasZeroSpread) {
  const std::vector<double> s = {7};
  const auto sum = summarize(s);
  EXPECT_DOUBLE_EQ(sum.cv, 0);
  EXPECT_DOUBLE_EQ(sum.median_s, 7);
}

TEST(Summarize, RejectsEmpty) { EXPECT_THROW(summarize(std::vector<double>{}), std::invalid_argument); }

StopRule rule_for_test() {
  StopRule r;
  r.min_samples = 5;
  r.max_samples = 100;
  r.target_cv = 0.01;
  r.stable_window = 10;
  r.min_rel_gain = 0.005;
  r.budget_s = 10;
  return r;
}

TEST(StopRule, QuietSamplesStopAtMinimumCountOnCv) {
  StopState st(rule_for_test());
  int n = 0;
  double elapsed = 0;
  while (!st.add(1.0 + 1e-4 * (n % 2), elapsed += 1e-3)) ++n;
  EXPECT_EQ(st.samples().size(), 5u);
  EXPECT_EQ(st.reason(), StopReason::cv_reached);
}

TEST(StopRule, NeverStopsBeforeMinimumCount) {
  auto r = rule_for_test();
  r.min_samples = 8;
  StopState st(r);
  for (int i = 0; i < 7; ++i) EXPECT_FALSE(st.add(1.0, 0.001 * i));
  EXPECT_TRUE(st.add(1.0, 0.008));
}

TEST(StopRule, NoisySamplesStopWhenTheMinimumSettles) {
  // Interference adds 0-300% on top of a true time of 1.0: the spread never falls under the
  // target, but the minimum stops improving.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(0.0, 3.0);
  StopState st(rule_for_test());
  double elapsed = 0;
  int n = 0;
  while (!st.add(1.0 + (n == 3 ? 0.0 : noise(rng)), elapsed += 1e-3)) ++n;
  EXPECT_EQ(st.reason(), StopReason::min_settled);
  EXPECT_DOUBLE_EQ(st.summary().min_s, 1.0);
  EXPECT_LT(st.samples().size(), 100u);
}

TEST(StopRule, KeepsSamplingWhileTheMinimumImproves) {
  auto r = rule_for_test();
  r.max_samples = 40;
  StopState st(r);
  double t = 2.0;
  double elapsed = 0;
  int n = 0;
  // Every sample 2% faster than the last, with alternating noise so the cv stays high.
  while (!st.add((n % 2 ? t * 2 : t), elapsed += 1e-3)) {
    ++n;
    t *= 0.98;
  }
  EXPECT_EQ(st.reason(), StopReason::max_samples);
  EXPECT_EQ(st.samples().size(), 40u);
}

TEST(StopRule, BudgetEndsANoisyPoint) {
  auto r = rule_for_test();
  r.budget_s = 0.5;
  r.stable_window = 0;  // only the budget can stop it
  StopState st(r);
  double elapsed = 0;
  int n = 0;
  while (!st.add(n % 2 ? 1.0 : 3.0, elapsed += 0.1)) ++n;
  EXPECT_EQ(st.reason(), StopReason::budget_spent);
  EXPECT_EQ(st.samples().size(), 5u);
}

TEST(StopRule, SlowPointStopsOnBudgetBeforeMinimumCount) {
  auto r = rule_for_test();
  r.budget_s = 1.0;
  StopState st(r);
  EXPECT_FALSE(st.add(0.6, 0.6));
  EXPECT_TRUE(st.add(0.6, 1.2));
  EXPECT_EQ(st.reason(), StopReason::budget_spent);
}

TEST(LinearFitTest, RecoversLine) {
  const std::vector<double> x = {1, 2, 3, 4};
  const std::vector<double> y = {3, 5, 7, 9};
  const auto f = fit_linear(x, y);
  EXPECT_NEAR(f.intercept, 1, 1e-12);
  EXPECT_NEAR(f.slope, 2, 1e-12);
}

TEST(LinearFitTest, RejectsDegenerateInput) {
  const std::vector<double> x = {2, 2};
  const std::vector<double> y = {1, 3};
  EXPECT_THROW(fit_linear(x, y), std::invalid_argument);
}

}  // namespace
}  // namespace truepeak
