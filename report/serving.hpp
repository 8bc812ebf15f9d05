// What `compare --model` and `plan` share: one unit of work as the estimator runs it, the
// estimator's prediction for a batch of it, the figures derived from that prediction (requests and
// tokens per second, cost per million), the largest batch within a latency target, device labels,
// prices and the cheapest mark. Every time here comes from a Predictor (the estimator on the
// profile in the command line); nothing is taken from a datasheet.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/profile.hpp"

namespace truepeak::report {

// One unit of work: an inference (one sample), or for a decoder one request (a prompt of `seq`
// tokens, then `output_tokens` generated one decode step each).
struct Workload {
  std::string model;
  std::string dtype;
  std::string runtime;              // empty: the library alone
  bool decoder = false;
  std::optional<std::int64_t> seq;  // decoders: prompt tokens; encoders: tokens per sequence
  std::int64_t context = 0;         // decoders: the context the decode step is timed at
  std::int64_t output_tokens = 0;   // decoders: tokens generated per request
};

// "one request = 2048-token prompt + 128 output tokens (decode step timed at context 2112),
// batch 8, bf16", "one inference = one sample, batch 8, f32"; without a batch, "batch as chosen
// per device".
std::string describe_workload(const Workload& workload, std::optional<std::int64_t> batch);
// The workload's fields, for the JSON printers.
nlohmann::json workload_to_json(const Workload& workload);
// "requests" or "inferences"
std::string unit_plural(const Workload& workload);

// The estimator's figures for one batch on one device.
struct Prediction {
  double latency_s = 0;                  // one pass of the batch (decoders: the prefill)
  std::optional<double> decode_s;        // decoders: one decode step of the batch
  std::optional<double> naive_latency_s;  // the same work over datasheet peaks
  std::optional<double> naive_decode_s;
  bool fits = true;  // in the device's memory (decoders: with the KV cache of the last token)
  std::string error;  // non-empty: this device cannot run the estimate (no figure for the dtype)
};
using Predictor =
    std::function<Prediction(const Profile&, const Device&, std::int64_t batch)>;

// The latency a target applies to: a decoder's decode step (time per output token), else the
// pass (a request waits for its whole batch).
double target_latency_s(const Prediction& prediction);
// One batch of requests from start to end: the pass; decoders: the prefill, which yields the
// first token, then one decode step per further token.
double batch_time_s(const Workload& workload, const Prediction& prediction);
// Requests (inferences) per second of one instance running batches of `batch` back to back.
double requests_per_s(const Workload& workload, const Prediction& prediction, std::int64_t batch);
// Decoders: output tokens per second of one instance, prefills included.
double output_tokens_per_s(const Workload& workload, const Prediction& prediction,
                           std::int64_t batch);
// USD per million units when one instance at `usd_per_hour` does `units` in `seconds`.
double usd_per_million(double usd_per_hour, double seconds, double units);

// The batch search stops here: a larger batch is no plan for a latency target.
inline constexpr std::int64_t kMaxSearchBatch = 65536;

// What stops a batch search at its batch: the next batch is over the latency target, does not
// fit in memory, cannot be estimated, or is past the search's end.
enum class BatchLimit { latency, memory, estimate, search_end };

struct BatchSearch {
  std::int64_t batch = 0;  // 0: no batch meets the target (or the estimator could not run)
  Prediction prediction;   // at `batch`; when it is 0, at batch 1
  BatchLimit limit = BatchLimit::latency;
};
// The largest batch up to `max_batch` that fits the device's memory and whose target latency is
// at most `limit_s`: batches doubled from 1 until one fails, then bisection between the last that
// met the target and the first that did not (a batch takes no less time than a smaller one).
BatchSearch largest_batch_within(double limit_s,
                                 const std::function<Prediction(std::int64_t)>& predict,
                                 std::int64_t max_batch = kMaxSearchBatch);
// "latency", "memory", "estimate", "search_end" (JSON).
std::string_view to_string(BatchLimit limit);
// A row's note on what stopped its batch: "" for the latency target (the usual case), "batch 17
// does not fit in memory", ...
std::string limit_note(std::int64_t batch, BatchLimit limit);
// Why a search found no batch: "cannot meet 50 ms per request: batch 1 takes 61.2 ms" (or does
// not fit, or the estimator's error).
std::string no_batch_reason(const Workload& workload, double limit_s, const BatchSearch& search);

// Every device of every profile, "<machine label>/<device id>"; where two profiles share a label
// (the CPU profiles under results/ are all "dev-cpu"), their devices are told apart by the
// profile's source (its file) in brackets. `sources` may be empty.
std::vector<std::string> device_labels(const std::vector<Profile>& profiles,
                                       const std::vector<std::string>& sources);

// `prices` maps a machine label to USD per hour and overrides the profile's price. Throws
// InputError naming the labels when one names no profile.
void check_price_labels(const std::vector<Profile>& profiles,
                        const std::map<std::string, double>& prices);
std::optional<double> price_of(const Profile& profile, const std::map<std::string, double>& prices);
// Parses "LABEL=USD" (USD >= 0). Throws InputError.
std::pair<std::string, double> parse_price(const std::string& text);
// Each --price given, by label; a later one for a label wins. Throws InputError.
std::map<std::string, double> parse_prices(const std::vector<std::string>& texts);

// Sets `cheapest` on the row of lowest cost(row) (a std::optional<double>) when at least two rows
// have a cost: with one price there is nothing to compare it with.
template <class Row, class Cost>
void mark_cheapest(std::vector<Row>& rows, Cost cost) {
  Row* best = nullptr;
  int priced = 0;
  for (auto& row : rows) {
    const std::optional<double> c = cost(row);
    if (!c) continue;
    ++priced;
    if (!best || *c < *cost(*best)) best = &row;
  }
  if (priced >= 2) best->cheapest = true;
}

// The non-empty notes, joined by "; ".
std::string join_notes(const std::vector<std::string>& notes);
// "12345", "922.1", "0.512", "0.00002345": about four significant figures, no exponent (rates,
// dollars).
std::string format_plain(double value);

}  // namespace truepeak::report
