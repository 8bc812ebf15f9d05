// The sentinel's probes: their baseline, the slow and quiet verdicts, and their report.
#include "calibrate/sentinel.hpp"

#include <algorithm>

#include "calibrate/runner.hpp"

namespace truepeak::driver_detail {

void SentinelProbe::calibrate_baseline(const std::atomic<bool>* stop) {
  StopRule baseline_rule = rule_;
  baseline_rule.min_samples = std::max(rule_.min_samples, 10);
  baseline_rule.budget_s = std::max(rule_.budget_s * 4, 0.05);
  baseline_s_ = measure(*kernel_, baseline_rule, stop).summary.min_s;
}

bool SentinelProbe::slowed(const std::atomic<bool>* stop) {
  const double t = measure(*kernel_, rule_, stop).summary.min_s;
  double recent = probes_s_.size() < kWindow ? baseline_s_ : probes_s_.back();
  for (std::size_t i = probes_s_.size() > kWindow ? probes_s_.size() - kWindow : 0;
       i < probes_s_.size(); ++i)
    recent = std::min(recent, probes_s_[i]);
  probes_s_.push_back(t);
  baseline_s_ = std::min(baseline_s_, t);
  const bool slow = t > recent * slowdown_;
  slow_probes_ += slow ? 1 : 0;
  return slow;
}

bool SentinelProbe::within(double fraction, const std::atomic<bool>* stop) {
  const double t = measure(*kernel_, rule_, stop).summary.min_s;
  baseline_s_ = std::min(baseline_s_, t);
  return t <= baseline_s_ * (1 + fraction);
}

nlohmann::json SentinelProbe::report() const {
  nlohmann::json j = {{"kernel", kernel_->name()},
                      {"baseline_s", baseline_s_},
                      {"probes", probes_s_.size()},
                      {"slow_probes", slow_probes_}};
  if (!probes_s_.empty()) {
    const auto s = summarize(probes_s_);
    j["probe_min_s"] = s.min_s;
    j["probe_median_s"] = s.median_s;
    j["probe_max_s"] = s.max_s;
    j["probe_cv"] = s.cv;
  }
  return j;
}

Sentinel::Sentinel(std::vector<std::unique_ptr<Kernel>> kernels, StopRule rule, double slowdown)
    : slowdown_(slowdown) {
  for (auto& k : kernels) probes_.emplace_back(std::move(k), rule, slowdown);
}

void Sentinel::calibrate_baseline(const std::atomic<bool>* stop) {
  for (auto& p : probes_) p.calibrate_baseline(stop);
}

bool Sentinel::slowed(const std::atomic<bool>* stop) {
  bool slow = false;
  for (auto& p : probes_) slow = p.slowed(stop) || slow;  // every probe runs, every round
  ++rounds_;
  slow_rounds_ += slow ? 1 : 0;
  return slow;
}

bool Sentinel::quiet(const std::atomic<bool>* stop) {
  bool quiet = true;
  for (auto& p : probes_) quiet = p.quiet(stop) && quiet;
  return quiet;
}

nlohmann::json Sentinel::report(int remeasured) const {
  nlohmann::json j = probes_.front().report();
  j["slowdown_threshold"] = slowdown_;
  j["window_probes"] = SentinelProbe::kWindow;
  j["probes"] = rounds_;
  j["slow_probes"] = slow_rounds_;
  j["points_remeasured"] = remeasured;
  if (probes_.size() > 1) {
    j["kernels"] = nlohmann::json::array();
    for (const auto& p : probes_) j["kernels"].push_back(p.report());
  }
  return j;
}

}  // namespace truepeak::driver_detail
