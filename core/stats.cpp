#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace truepeak {

double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median of no values");
  const auto mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lower + upper);
}

Summary summarize(std::span<const double> samples_s) {
  if (samples_s.empty()) throw std::invalid_argument("summary of no samples");
  Summary s;
  s.samples = static_cast<int>(samples_s.size());
  s.min_s = *std::min_element(samples_s.begin(), samples_s.end());
  s.max_s = *std::max_element(samples_s.begin(), samples_s.end());
  s.mean_s = std::accumulate(samples_s.begin(), samples_s.end(), 0.0) / double(s.samples);
  s.median_s = median(std::vector<double>(samples_s.begin(), samples_s.end()));
  s.typical_s = s.median_s;
  if (s.samples > 1 && s.mean_s > 0) {
    double ss = 0;
    for (double x : samples_s) ss += (x - s.mean_s) * (x - s.mean_s);
    s.cv = std::sqrt(ss / double(s.samples - 1)) / s.mean_s;
  }
  return s;
}

bool StopState::add(double sample_s, double elapsed_s) {
  samples_.push_back(sample_s);
  running_min_.push_back(running_min_.empty() ? sample_s : std::min(running_min_.back(), sample_s));
  sum_ += sample_s;
  sum_sq_ += sample_s * sample_s;
  const auto n = static_cast<int>(samples_.size());

  if (n >= rule_.max_samples) {
    reason_ = StopReason::max_samples;
    return true;
  }
  if (n < rule_.min_samples) {
    if (elapsed_s >= rule_.budget_s && n >= 1) {
      // The budget runs out before the minimum count only for very slow points: keep what we have.
      reason_ = StopReason::budget_spent;
      return true;
    }
    return false;
  }
  const double mean = sum_ / n;
  const double var = n > 1 ? std::max(0.0, (sum_sq_ - n * mean * mean) / (n - 1)) : 0.0;
  const double cv = mean > 0 ? std::sqrt(var) / mean : 0.0;
  if (cv <= rule_.target_cv) {
    reason_ = StopReason::cv_reached;
    return true;
  }
  if (rule_.stable_window > 0 && n > rule_.stable_window) {
    const double before = running_min_[static_cast<std::size_t>(n - 1 - rule_.stable_window)];
    const double now = running_min_.back();
    if (before > 0 && (before - now) / before < rule_.min_rel_gain) {
      reason_ = StopReason::min_settled;
      return true;
    }
  }
  if (elapsed_s >= rule_.budget_s) {
    reason_ = StopReason::budget_spent;
    return true;
  }
  return false;
}

double expected_time_s(const StopRule& rule, double sample_s) {
  const double warmup = std::max(rule.warmup_runs * sample_s, rule.warmup_s);
  // Samples are taken until the budget is spent: the last one runs past it.
  const double within_budget = sample_s > 0 ? std::max(1.0, std::ceil(rule.budget_s / sample_s)) : 1.0;
  const double samples = std::min({double(std::max({rule.min_samples, rule.stable_window + 1, 1})), within_budget,
                                   double(std::max(rule.max_samples, 1))});
  return warmup + samples * sample_s;
}

LinearFit fit_linear(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size() || x.size() < 2) throw std::invalid_argument("linear fit needs two or more points");
  const double n = double(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (sxx == 0) throw std::invalid_argument("linear fit needs two distinct x values");
  LinearFit fit;
  fit.slope = sxy / sxx;
  fit.intercept = my - fit.slope * mx;
  return fit;
}

}  // namespace truepeak
