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

// The time StopState takes over samples that alternate around `sample_s` (the fastest never
// improving after the first two), warm-up counted as expected_time_s counts it.
double simulated_time_s(const StopRule& r, double sample_s) {
  StopState st(r);
  double elapsed = 0;
  for (int n = 0;; ++n) {
    elapsed += n % 2 ? sample_s : 1.5 * sample_s;
    if (st.add(n % 2 ? sample_s : 1.5 * sample_s, elapsed)) break;
  }
  return std::max(r.warmup_runs * sample_s, r.warmup_s) + elapsed;
}

TEST(StopRule, ExpectedTimeCoversASettledPointAndStopsAtTheBudget) {
  StopRule r = rule_for_test();  // 5 samples at least, a window of 10
  r.budget_s = 1.0;
  r.warmup_runs = 2;
  r.warmup_s = 0.02;
  // A settled point: the window's samples, within a sample's spread of the simulation.
  const double fast = 1e-3;
  EXPECT_NEAR(expected_time_s(r, fast), simulated_time_s(r, fast), 1.5 * 11 * fast);
  EXPECT_GE(expected_time_s(r, fast), 11 * fast + 0.02);
  // A slow point: the warm-up runs, then samples until the budget is spent.
  EXPECT_NEAR(expected_time_s(r, 0.3), 2 * 0.3 + 4 * 0.3, 1e-9);
  EXPECT_NEAR(expected_time_s(r, 0.3), simulated_time_s(r, 0.3), 0.3);
  // A kernel longer than the budget: one sample after the warm-up.
  EXPECT_NEAR(expected_time_s(r, 2.0), 3 * 2.0, 1e-9);
  // The minimum count, when larger than the window.
  r.min_samples = 50;
  EXPECT_NEAR(expected_time_s(r, fast), 50 * fast + 0.02, 1e-9);
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
