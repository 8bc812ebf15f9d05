// Statistics over timing samples and the stopping rule that decides when a point is measured.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace truepeak {

struct Summary {
  double min_s = 0;     // fastest sample: the capability figure (interference only adds time)
  double median_s = 0;
  double mean_s = 0;
  double max_s = 0;
  double cv = 0;        // sample standard deviation / mean
  int samples = 0;
  // The median of the point's quietest look: the lowest median among its runs of samples under
  // its stopping rule (a first look, a second look, a confirmation). One look: its median.
  double typical_s = 0;
};

// Throws std::invalid_argument on an empty span.
Summary summarize(std::span<const double> samples_s);

// When to stop sampling one point. Sampling goes on until at least `min_samples` are taken and
// then stops as soon as one of these holds:
//   - the coefficient of variation is at or under `target_cv` (a quiet machine);
//   - the fastest sample has improved by less than `min_rel_gain` over the last
//     `stable_window` samples (a noisy machine: the minimum has settled even if the spread has not);
//   - the point's time budget `budget_s` is spent, or `max_samples` are taken.
struct StopRule {
  int min_samples = 5;
  int max_samples = 10000;
  double target_cv = 0.01;
  int stable_window = 10;
  double min_rel_gain = 0.005;
  double budget_s = 1.0;
  // Warm-up before the first timed sample: at least `warmup_runs` calls and `warmup_s` seconds.
  int warmup_runs = 2;
  double warmup_s = 0.02;
};

enum class StopReason { cv_reached, min_settled, budget_spent, max_samples };

// Incremental form of the rule, so that it can be tested on synthetic samples.
class StopState {
 public:
  explicit StopState(StopRule rule) : rule_(rule) {}
  // Adds one sample; `elapsed_s` is the wall time spent on this point so far (samples and
  // overheads). Returns true when sampling should stop.
  bool add(double sample_s, double elapsed_s);
  StopReason reason() const { return reason_; }
  const std::vector<double>& samples() const { return samples_; }
  Summary summary() const { return summarize(samples_); }

 private:
  StopRule rule_;
  std::vector<double> samples_;
  std::vector<double> running_min_;  // fastest sample after each add
  double sum_ = 0, sum_sq_ = 0;
  StopReason reason_ = StopReason::max_samples;
};

// About how long `rule` takes over a kernel of `sample_s` a run on a settled machine: its warm-up,
// then samples until the fastest has settled over the stable window (or the minimum count),
// within the budget. For planning (what fits before a deadline), not for reporting.
double expected_time_s(const StopRule& rule, double sample_s);

// Least-squares fit of y = a + b * x. Returns {a, b}; needs at least two distinct x.
struct LinearFit {
  double intercept = 0;
  double slope = 0;
};
LinearFit fit_linear(std::span<const double> x, std::span<const double> y);

double median(std::vector<double> values);

}  // namespace truepeak
