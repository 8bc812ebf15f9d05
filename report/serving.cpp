#include "report/serving.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "core/error.hpp"
#include "core/units.hpp"
#include "report/summary.hpp"

namespace truepeak::report {

std::string describe_workload(const Workload& w, std::optional<std::int64_t> batch) {
  const std::string batch_text =
      batch ? fmt::format("batch {}", *batch) : std::string("batch as chosen per device");
  const std::string runtime = w.runtime.empty() ? "" : fmt::format(", runtime {}", w.runtime);
  if (w.decoder) {
    return fmt::format(
        "one request = {}-token prompt + {} output tokens (decode step timed at context {}), {}, "
        "{}{}",
        w.seq.value_or(0), w.output_tokens, w.context, batch_text, w.dtype, runtime);
  }
  const std::string what =
      w.seq ? fmt::format("one {}-token sequence", *w.seq) : std::string("one sample");
  return fmt::format("one inference = {}, {}, {}{}", what, batch_text, w.dtype, runtime);
}

nlohmann::json workload_to_json(const Workload& w) {
  nlohmann::json out = {{"model", w.model},
                        {"dtype", w.dtype},
                        {"runtime", w.runtime.empty() ? nlohmann::json(nullptr) : nlohmann::json(w.runtime)},
                        {"decoder", w.decoder},
                        {"seq", w.seq ? nlohmann::json(*w.seq) : nlohmann::json(nullptr)}};
  if (w.decoder) {
    out["context"] = w.context;
    out["output_tokens"] = w.output_tokens;
  }
  return out;
}

std::string unit_plural(const Workload& w) { return w.decoder ? "requests" : "inferences"; }

double target_latency_s(const Prediction& p) { return p.decode_s.value_or(p.latency_s); }

double batch_time_s(const Workload& w, const Prediction& p) {
  if (!w.decoder || !p.decode_s) return p.latency_s;
  return p.latency_s + static_cast<double>(std::max<std::int64_t>(w.output_tokens - 1, 0)) *
                           *p.decode_s;
}

double requests_per_s(const Workload& w, const Prediction& p, std::int64_t batch) {
  const double t = batch_time_s(w, p);
  return t > 0 ? static_cast<double>(batch) / t : 0;
}

double output_tokens_per_s(const Workload& w, const Prediction& p, std::int64_t batch) {
  return requests_per_s(w, p, batch) * static_cast<double>(w.output_tokens);
}

double usd_per_million(double usd_per_hour, double seconds, double units) {
  return usd_per_hour / 3600.0 * seconds / units * 1e6;
}

BatchSearch largest_batch_within(double limit_s,
                                 const std::function<Prediction(std::int64_t)>& predict,
                                 std::int64_t max_batch) {
  BatchSearch out;
  const auto limit_of = [&](const Prediction& p) -> std::optional<BatchLimit> {
    if (!p.error.empty()) return BatchLimit::estimate;
    if (!p.fits) return BatchLimit::memory;
    if (target_latency_s(p) > limit_s) return BatchLimit::latency;
    return std::nullopt;
  };
  out.prediction = predict(1);
  if (const auto limit = limit_of(out.prediction)) {
    out.limit = *limit;
    return out;
  }
  out.batch = 1;
  out.limit = BatchLimit::search_end;
  std::int64_t bad = 0;  // the first batch found not to meet the target; 0: none yet
  while (out.batch < max_batch) {
    const std::int64_t next = std::min(out.batch * 2, max_batch);
    auto p = predict(next);
    if (const auto limit = limit_of(p)) {
      bad = next;
      out.limit = *limit;
      break;
    }
    out.batch = next;
    out.prediction = std::move(p);
  }
  while (bad != 0 && bad - out.batch > 1) {
    const std::int64_t mid = out.batch + (bad - out.batch) / 2;
    auto p = predict(mid);
    if (const auto limit = limit_of(p)) {
      bad = mid;
      out.limit = *limit;
    } else {
      out.batch = mid;
      out.prediction = std::move(p);
    }
  }
  return out;
}

std::string_view to_string(BatchLimit limit) {
  switch (limit) {
    case BatchLimit::latency:
      return "latency";
    case BatchLimit::memory:
      return "memory";
    case BatchLimit::estimate:
      return "estimate";
    case BatchLimit::search_end:
      return "search_end";
  }
  return "latency";
}

std::string limit_note(std::int64_t batch, BatchLimit limit) {
  switch (limit) {
    case BatchLimit::latency:
      return "";
    case BatchLimit::memory:
      return fmt::format("batch {} does not fit in memory", batch + 1);
    case BatchLimit::estimate:
      return fmt::format("batch {} cannot be estimated", batch + 1);
    case BatchLimit::search_end:
      return fmt::format("the search stops at batch {}", batch);
  }
  return "";
}

std::string no_batch_reason(const Workload& w, double limit_s, const BatchSearch& search) {
  const auto& p = search.prediction;
  if (!p.error.empty()) return "cannot estimate: " + p.error;
  if (!p.fits) return "does not fit in memory at batch 1";
  return fmt::format("cannot meet {} {}: batch 1 takes {}", format_time_s(limit_s),
                     w.decoder ? "per output token" : "per request",
                     format_time_s(target_latency_s(p)));
}

std::vector<std::string> device_labels(const std::vector<Profile>& profiles,
                                       const std::vector<std::string>& sources) {
  std::vector<std::string> labels;
  std::vector<std::size_t> owner;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    for (const auto& d : profiles[i].devices) {
      labels.push_back(profiles[i].machine.label + "/" + d.id);
      owner.push_back(i);
    }
  }
  std::vector<std::string> out = labels;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const auto shared = std::count(labels.begin(), labels.end(), labels[i]) > 1;
    if (shared && owner[i] < sources.size()) out[i] += " [" + sources[owner[i]] + "]";
  }
  return out;
}

void check_price_labels(const std::vector<Profile>& profiles,
                        const std::map<std::string, double>& prices) {
  for (const auto& [label, usd] : prices) {
    const bool known = std::any_of(profiles.begin(), profiles.end(),
                                   [&](const auto& p) { return p.machine.label == label; });
    if (known) continue;
    std::vector<std::string> labels;
    for (const auto& p : profiles) labels.push_back(p.machine.label);
    throw InputError(
        fmt::format("--price {}={}: no profile has the machine label '{}' (labels: {})", label,
                    usd, label, fmt::join(labels, ", ")));
  }
}

std::optional<double> price_of(const Profile& profile,
                               const std::map<std::string, double>& prices) {
  if (const auto it = prices.find(profile.machine.label); it != prices.end()) return it->second;
  return profile.machine.price_per_hour_usd;
}

std::pair<std::string, double> parse_price(const std::string& text) {
  const auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw InputError(
        fmt::format("--price '{}': expected LABEL=USD_PER_HOUR, e.g. my-box=2.5", text));
  }
  const auto value_text = text.substr(eq + 1);
  std::size_t pos = 0;
  double usd = 0;
  try {
    usd = std::stod(value_text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != value_text.size() || !std::isfinite(usd) || usd < 0) {
    throw InputError(fmt::format(
        "--price '{}': '{}' is not a price in USD per hour (a number >= 0)", text, value_text));
  }
  return {text.substr(0, eq), usd};
}

std::map<std::string, double> parse_prices(const std::vector<std::string>& texts) {
  std::map<std::string, double> prices;
  for (const auto& text : texts) {
    const auto [label, usd] = parse_price(text);
    prices[label] = usd;
  }
  return prices;
}

std::string join_notes(const std::vector<std::string>& notes) {
  std::string out;
  for (const auto& note : notes)
    if (!note.empty()) out += (out.empty() ? "" : "; ") + note;
  return out;
}

std::string format_plain(double v) {
  if (v >= 1000 || v <= 0) return fmt::format("{:.0f}", v);
  // Four significant figures in fixed notation: a cost per token can be 0.00002 dollars.
  const int magnitude = static_cast<int>(std::floor(std::log10(v)));
  const int decimals = std::clamp(3 - magnitude, 0, 15);
  std::string out = fmt::format("{:.{}f}", v, decimals);
  if (out.find('.') != std::string::npos) {
    out.erase(out.find_last_not_of('0') + 1);
    if (out.back() == '.') out.pop_back();
  }
  return out;
}

}  // namespace truepeak::report
