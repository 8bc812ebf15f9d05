// Capacity planning on measured figures (`truepeak plan`): for each device of each profile, the
// largest batch that meets a latency target, the throughput of one instance at that batch, the
// instances a load needs and what they cost. Every time comes from the Predictor (the estimator on
// the profile); the formula is in docs/report.md ("plan").
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/profile.hpp"
#include "report/serving.hpp"

namespace truepeak::report {

struct PlanLoad {
  bool tokens = false;      // per second in output tokens (decoders), else in requests
  double base_per_s = 0;    // the usual load
  std::optional<double> peak_per_s;  // the highest load to serve; unset: the base
  double headroom = 0.2;    // spare capacity over the base load (0.2: 20%)
  double growth = 1.0;      // the peak's expected growth over the plan's horizon
  double max_latency_s = 0;  // per request (decoders: per output token)

  double peak() const { return peak_per_s.value_or(base_per_s); }
  // max(base x (1 + headroom), peak x growth): the capacity the instances must provide.
  double required_per_s() const;
  std::string unit() const;  // "requests/s" or "output tokens/s"
};

// Throws InputError naming the flag when a figure is not finite or out of range (a peak below the
// base load among them).
void check_load(const PlanLoad& load);

struct PlanRow {
  std::string device;  // "<machine label>/<device id>" (device_labels)
  std::optional<double> price_per_hour_usd;
  std::int64_t batch = 0;
  Prediction prediction;           // at `batch`
  double per_instance_per_s = 0;   // throughput of one instance, in the load's unit
  double instances = 0;            // ceil(required / per_instance), a whole number
  std::optional<double> usd_per_hour;     // instances x price
  std::optional<double> usd_per_million;  // usd_per_hour over the base load of an hour
  BatchLimit limit = BatchLimit::latency;  // what stops the batch
  std::string error;  // no batch meets the target, or no estimate: then the figures are empty
  bool cheapest = false;
};

struct Plan {
  Workload workload;
  PlanLoad load;
  std::vector<PlanRow> rows;  // by cost per hour, unpriced next (by instances), errors last
};

// The plan over every device of `profiles`; `sources` name the profiles (their files) where two
// share a machine label; `prices` as compare's. Throws InputError on a bad load or price label.
Plan make_plan(const std::vector<Profile>& profiles, const std::vector<std::string>& sources,
               const std::map<std::string, double>& prices, const Workload& workload,
               const PlanLoad& load, const Predictor& predict);

// More instances than this are no plan: the row says so instead of a number.
inline constexpr double kMaxInstances = 1e9;

std::string plan_to_text(const Plan& plan);
std::string plan_to_markdown(const Plan& plan);
nlohmann::json plan_to_json(const Plan& plan);

}  // namespace truepeak::report
