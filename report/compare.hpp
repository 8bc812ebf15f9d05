// Machines side by side: every measured figure of every device, its ratio to the first device and
// its measured/datasheet ratio; with a model, predicted latency, throughput and cost per million
// inferences, sorted by cost. Devices of different kinds (a CPU box, a GPU box) share one table.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/profile.hpp"
#include "report/summary.hpp"

namespace truepeak::report {

struct CompareColumn {
  std::string label;  // "<machine>/<device id>"
  std::string machine;
  std::string device_id;
  std::string device_kind;
  std::string device_name;
  std::optional<double> price_per_hour_usd;
};

struct CompareCell {
  std::optional<double> value;
  std::optional<double> datasheet;
};

struct CompareRow {
  std::string group;               // "gemm", "conv", "vector", "memory", "transfer", "overhead", "runtime"
  std::string name;                // "bf16", "L2", "h2d_pinned", ...
  std::string unit;                // "flops_per_s", "Bps", "s"
  std::vector<CompareCell> cells;  // one per column

  std::optional<double> ratio_to_first(std::size_t column) const;
  std::optional<double> of_datasheet(std::size_t column) const;
};

// One device's prediction for the model.
struct CostRow {
  std::size_t column = 0;
  double latency_s = 0;
  double inferences_per_s = 0;
  std::optional<double> usd_per_million;  // needs a price
  std::optional<double> naive_latency_s;  // the same work over datasheet peaks
  bool fits = true;                       // the model fits the device's memory
  std::string error;                      // why there is no prediction (then the rest is empty)
  bool cheapest = false;                  // lowest cost among rows that fit
};

struct CostTable {
  std::string model;
  int batch = 1;
  std::string dtype;
  std::vector<CostRow> rows;  // sorted by cost, unpriced last
};

struct Comparison {
  std::vector<CompareColumn> columns;
  std::vector<CompareRow> rows;
  std::optional<CostTable> cost;
};

// `prices` maps a machine label to USD per hour and overrides the profile's price. A label that
// names no profile is an InputError.
Comparison compare_profiles(const std::vector<Profile>& profiles,
                            const std::map<std::string, double>& prices);

// What compare needs from the estimator: one batch's latency on a device, measured and naive.
struct Prediction {
  double latency_s = 0;
  std::optional<double> naive_latency_s;
  bool fits = true;
  std::string
      error;  // non-empty: this device cannot run the estimate (e.g. no figure for the dtype)
};
using Predictor = std::function<Prediction(const Profile&, const Device&)>;

// Fills comparison.cost: one row per column, cost = price/3600 * latency / batch * 1e6. Sorted by
// cost; rows without a price, that do not fit, or with an error go last; the cheapest that fits is
// marked.
void add_cost(Comparison& comparison, const std::vector<Profile>& profiles,
              const std::string& model, int batch, const std::string& dtype,
              const Predictor& predict);

std::string comparison_to_text(const Comparison& comparison);
std::string comparison_to_markdown(const Comparison& comparison);
nlohmann::json comparison_to_json(const Comparison& comparison);

// Parses "LABEL=USD" (USD >= 0). Throws InputError.
std::pair<std::string, double> parse_price(const std::string& text);

}  // namespace truepeak::report
