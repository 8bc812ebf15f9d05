// Printers of estimates: one result model, three formats (aligned text, markdown, JSON).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "estimate/estimator.hpp"

namespace truepeak::estimate {

// What the printers say about where the figures came from.
struct PrintContext {
  std::string profile_path;
  std::string profile_label;
  std::optional<std::int64_t> max_batch;
  std::string runtime;  // the runtime record applied (estimate --runtime KEY); empty: the library alone
};

enum class Format { table, markdown, json };

std::string format_estimate(const Estimate& est, const PrintContext& ctx, Format format);
nlohmann::json estimate_to_json(const Estimate& est, const PrintContext& ctx);

std::string format_sweep(const Sweep& sweep, const PrintContext& ctx, Format format);
nlohmann::json sweep_to_json(const Sweep& sweep, const PrintContext& ctx);

}  // namespace truepeak::estimate
