// Printers of estimates: one result model, three formats (aligned text, markdown, JSON).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "estimate/estimator.hpp"

namespace truepeak::estimate {

// What the printers say about where the figures came from.
struct PrintContext {
  std::string profile_path;
  std::string profile_label;
  std::optional<std::int64_t> max_batch;
  std::string runtime;  // the runtime record applied (estimate --runtime KEY); empty: the library alone
  // Sizes the model computes from its data, which the estimate took as given (an ONNX graph's
  // NonMaxSuppression, NonZero, ...): one line each under a table's header, and the records of
  // JSON's `assumptions` (null: the model has none to make, as for a zoo or model-JSON model).
  std::vector<std::string> assumption_lines;
  nlohmann::json assumptions;
};

enum class Format { table, markdown, json };

std::string format_estimate(const Estimate& est, const PrintContext& ctx, Format format);
nlohmann::json estimate_to_json(const Estimate& est, const PrintContext& ctx);

std::string format_sweep(const Sweep& sweep, const PrintContext& ctx, Format format);
nlohmann::json sweep_to_json(const Sweep& sweep, const PrintContext& ctx);

}  // namespace truepeak::estimate
