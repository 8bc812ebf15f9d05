// Machines side by side: every measured figure of every device, its ratio to the first device and
// its measured/datasheet ratio; with a model, predicted latency, throughput and cost per million
// inferences (decoders: time to first token, time per output token, cost per million input and
// output tokens), sorted by cost, and each device's largest batch within a latency target. Devices
// of different kinds (a CPU box, a GPU box) share one table.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/profile.hpp"
#include "report/serving.hpp"
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

// One device's prediction for the model at one batch.
struct CostRow {
  std::size_t column = 0;
  std::int64_t batch = 1;
  double latency_s = 0;            // one pass of the batch (decoders: time to first token)
  std::optional<double> decode_s;  // decoders: one decode step (time per output token)
  // Inferences per second (decoders: requests per second, a prefill and then a decode step per
  // further token).
  double inferences_per_s = 0;
  std::optional<double> tokens_per_s;  // decoders: output tokens per second while decoding
  // USD per million inferences (decoders: per million output tokens, a decode step each); needs
  // a price.
  std::optional<double> usd_per_million;
  std::optional<double> usd_per_million_input;  // decoders: per million prompt tokens (prefill)
  std::optional<double> naive_latency_s;        // the same work over datasheet peaks
  std::optional<double> naive_decode_s;
  bool fits = true;   // the model fits the device's memory
  std::string error;  // why there is no prediction (then the rest is empty)
  // Why no batch meets the latency target (cost_within; then the rest is empty).
  std::string unmet;
  std::optional<BatchLimit> limit;  // cost_within: what stops the batch
  bool cheapest = false;  // lowest cost among rows that fit, when two or more have a cost
};

struct CostTable {
  Workload workload;
  std::optional<std::int64_t> batch;    // unset: each row at its own batch
  std::optional<double> max_latency_s;  // the rows are each device's largest batch within it
  std::vector<CostRow> rows;            // sorted by cost, unpriced next, errors last
};

struct Comparison {
  std::vector<CompareColumn> columns;
  std::vector<CompareRow> rows;
  std::optional<CostTable> cost;         // at the batch asked for
  std::optional<CostTable> cost_within;  // at each device's largest batch within a latency target
};

// `prices` maps a machine label to USD per hour and overrides the profile's price. A label that
// names no profile is an InputError. `sources` (the profiles' files, may be empty) tell apart
// devices of profiles that share a machine label.
Comparison compare_profiles(const std::vector<Profile>& profiles,
                            const std::map<std::string, double>& prices,
                            const std::vector<std::string>& sources = {});

// Fills comparison.cost: one row per column at `batch`. Non-decoders: cost = price/3600 x latency
// / batch x 1e6 per million inferences. Decoders: per million output tokens price/3600 x decode
// step / batch x 1e6, per million input tokens price/3600 x prefill / (batch x prompt) x 1e6.
// Sorted by cost; rows without a price, that do not fit, or with an error go last; the cheapest
// that fits is marked when two or more rows have a cost.
void add_cost(Comparison& comparison, const std::vector<Profile>& profiles,
              const Workload& workload, std::int64_t batch, const Predictor& predict);
// Fills comparison.cost_within: each device at the largest batch whose target latency (decoders:
// per output token; others: per pass) is at most `max_latency_s` (largest_batch_within), costed
// as add_cost does; a device that cannot meet it even at batch 1 says so on its row.
void add_cost_within(Comparison& comparison, const std::vector<Profile>& profiles,
                     const Workload& workload, double max_latency_s, const Predictor& predict);

std::string comparison_to_text(const Comparison& comparison);
std::string comparison_to_markdown(const Comparison& comparison);
nlohmann::json comparison_to_json(const Comparison& comparison);

}  // namespace truepeak::report
