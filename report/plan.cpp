#include "report/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/table.hpp"
#include "core/units.hpp"
#include "report/summary.hpp"

namespace truepeak::report {

double PlanLoad::required_per_s() const {
  return std::max(base_per_s * (1 + headroom), peak() * growth);
}

std::string PlanLoad::unit() const { return tokens ? "output tokens/s" : "requests/s"; }

void check_load(const PlanLoad& load) {
  const std::string base_flag = load.tokens ? "--tokens-per-s" : "--qps";
  const std::string peak_flag = load.tokens ? "--peak-tokens-per-s" : "--peak-qps";
  const auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (!positive(load.base_per_s))
    throw InputError(fmt::format("{} {}: expected a load above 0 per second", base_flag,
                                 load.base_per_s));
  if (load.peak_per_s && !positive(*load.peak_per_s))
    throw InputError(fmt::format("{} {}: expected a load above 0 per second", peak_flag,
                                 *load.peak_per_s));
  if (load.peak_per_s && *load.peak_per_s < load.base_per_s)
    throw InputError(fmt::format("{} {}: below the base load ({} {}); the peak is the highest "
                                 "load, at least the base",
                                 peak_flag, *load.peak_per_s, base_flag, load.base_per_s));
  if (!(std::isfinite(load.headroom) && load.headroom >= 0))
    throw InputError(fmt::format(
        "--headroom {}: expected a fraction of 0 or more (0.2: 20% over the base load)",
        load.headroom));
  if (!positive(load.growth))
    throw InputError(fmt::format(
        "--growth {}: expected a factor above 0 (1.5: the peak grows by half)", load.growth));
  if (!positive(load.max_latency_s))
    throw InputError(fmt::format("--max-latency-ms {}: expected a time above 0 ms",
                                 load.max_latency_s * 1e3));
  if (!std::isfinite(load.required_per_s()))
    throw InputError(fmt::format("{} {}: the capacity to provide is not a finite number",
                                 base_flag, load.base_per_s));
}

namespace {

using nlohmann::json;

PlanRow plan_row(const Workload& w, const PlanLoad& load, std::string device,
                 std::optional<double> price, const std::function<Prediction(std::int64_t)>& f) {
  PlanRow row;
  row.device = std::move(device);
  row.price_per_hour_usd = price;
  const auto search = largest_batch_within(load.max_latency_s, f);
  if (search.batch == 0) {
    row.error = no_batch_reason(w, load.max_latency_s, search);
    return row;
  }
  row.batch = search.batch;
  row.prediction = search.prediction;
  row.limit = search.limit;
  row.per_instance_per_s = load.tokens ? output_tokens_per_s(w, row.prediction, row.batch)
                                       : requests_per_s(w, row.prediction, row.batch);
  if (!(row.per_instance_per_s > 0)) {
    row.error = "the estimate gives no throughput at this batch";
    return row;
  }
  // A quotient that is a whole number up to rounding (2400 / 800) needs that many, not one more.
  const double needed = load.required_per_s() / row.per_instance_per_s;
  row.instances = std::max(1.0, std::ceil(needed * (1 - 1e-12)));
  if (!(row.instances <= kMaxInstances)) {
    row.error = fmt::format("would need more than {:.0e} instances ({} {} each at batch {})",
                            kMaxInstances, format_plain(row.per_instance_per_s), load.unit(),
                            row.batch);
    return row;
  }
  if (price) {
    row.usd_per_hour = row.instances * *price;
    row.usd_per_million = usd_per_million(*row.usd_per_hour, 3600, load.base_per_s * 3600);
  }
  return row;
}

std::string unit_of_cost(const PlanLoad& load) {
  return load.tokens ? "output tokens" : "requests";
}

std::string row_note(const PlanRow& r) {
  return join_notes({r.error, r.cheapest ? "<- cheapest" : "",
                     r.error.empty() ? limit_note(r.batch, r.limit) : ""});
}

TextTable plan_table(const Plan& plan) {
  const bool decoder = plan.workload.decoder;
  std::vector<std::string> header{"device", "batch"};
  if (decoder) {
    header.push_back("time to first token");
    header.push_back("time per output token");
  } else {
    header.push_back("latency");
  }
  for (const auto& h : {fmt::format("{} per instance", plan.load.unit()), std::string("instances"),
                        std::string("USD/hour"),
                        fmt::format("USD per 1M {}", unit_of_cost(plan.load)),
                        std::string("")})
    header.push_back(h);
  const std::size_t width = header.size();
  TextTable t(std::move(header));
  t.set_left_columns({0, width - 1});
  for (const auto& r : plan.rows) {
    std::vector<std::string> cells{r.device};
    if (!r.error.empty()) {
      cells.resize(width - 1, "-");
      cells.push_back(row_note(r));
      t.add_row(std::move(cells));
      continue;
    }
    cells.push_back(std::to_string(r.batch));
    cells.push_back(format_time_s(r.prediction.latency_s));
    if (decoder) cells.push_back(format_time_s(target_latency_s(r.prediction)));
    cells.push_back(format_plain(r.per_instance_per_s));
    cells.push_back(fmt::format("{:.0f}", r.instances));
    cells.push_back(r.usd_per_hour ? format_plain(*r.usd_per_hour) : "- (no price)");
    cells.push_back(r.usd_per_million ? format_plain(*r.usd_per_million) : "-");
    cells.push_back(row_note(r));
    t.add_row(std::move(cells));
  }
  return t;
}

std::string plan_heading(const Plan& plan) {
  const auto& w = plan.workload;
  const auto& l = plan.load;
  std::string out = fmt::format("Plan for {}: {}.\n", w.model, describe_workload(w, std::nullopt));
  out += fmt::format("Load: base {} {}{}, peak {}{}, headroom {}%, growth {}.\n",
                     format_plain(l.base_per_s), l.unit(),
                     l.tokens || w.decoder ? "" : " (a request is one inference)", format_plain(l.peak()),
                     l.peak_per_s ? "" : " (the base)", format_plain(l.headroom * 100),
                     format_plain(l.growth));
  out += fmt::format("Capacity: max({} x (1 + {}), {} x {}) = {} {}.\n", format_plain(l.base_per_s),
                     format_plain(l.headroom), format_plain(l.peak()), format_plain(l.growth),
                     format_plain(l.required_per_s()), l.unit());
  if (w.decoder) {
    out += fmt::format(
        "Target: time per output token at most {} at the largest batch that meets it; an "
        "instance runs a batch's prefill, then a decode step per further token.\n",
        format_time_s(l.max_latency_s));
  } else {
    out += fmt::format(
        "Target: latency of a batch at most {} at the largest batch that meets it (a request "
        "waits for its whole batch; time queued before it is not counted).\n",
        format_time_s(l.max_latency_s));
  }
  out += fmt::format(
      "Instances = ceil(capacity / per instance); USD per 1M = USD/hour / ({} x 3600) x 1e6 (the "
      "base load).\n",
      format_plain(l.base_per_s));
  return out;
}

}  // namespace

Plan make_plan(const std::vector<Profile>& profiles, const std::vector<std::string>& sources,
               const std::map<std::string, double>& prices, const Workload& workload,
               const PlanLoad& load, const Predictor& predict) {
  check_load(load);
  check_price_labels(profiles, prices);
  if (load.tokens && !workload.decoder)
    throw InputError(fmt::format(
        "--tokens-per-s: {} is not a decoder (it generates no tokens); give the load with --qps",
        workload.model));
  Plan plan{workload, load, {}};
  const auto views = all_devices(profiles);
  const auto labels = device_labels(profiles, sources);
  for (std::size_t i = 0; i < views.size(); ++i) {
    const auto& v = views[i];
    plan.rows.push_back(
        plan_row(workload, load, labels[i], price_of(*v.profile, prices), [&](std::int64_t batch) {
          return predict(*v.profile, *v.device, batch);
        }));
  }
  std::stable_sort(plan.rows.begin(), plan.rows.end(), [](const PlanRow& a, const PlanRow& b) {
    if (a.error.empty() != b.error.empty()) return a.error.empty();
    if (a.usd_per_hour.has_value() != b.usd_per_hour.has_value())
      return a.usd_per_hour.has_value();
    if (a.usd_per_hour && *a.usd_per_hour != *b.usd_per_hour)
      return *a.usd_per_hour < *b.usd_per_hour;
    return a.instances < b.instances;
  });
  mark_cheapest(plan.rows, [](const PlanRow& r) { return r.usd_per_hour; });
  return plan;
}

std::string plan_to_text(const Plan& plan) { return plan_heading(plan) + "\n" + plan_table(plan).str(); }

std::string plan_to_markdown(const Plan& plan) {
  return "## Plan\n\n" + plan_heading(plan) + "\n" + plan_table(plan).markdown();
}

json plan_to_json(const Plan& plan) {
  const auto& l = plan.load;
  const auto optional = [](std::optional<double> v) { return v ? json(*v) : json(nullptr); };
  json rows = json::array();
  for (const auto& r : plan.rows) {
    json row = {{"device", r.device}, {"price_per_hour_usd", optional(r.price_per_hour_usd)}};
    if (!r.error.empty()) {
      row["error"] = r.error;
      rows.push_back(std::move(row));
      continue;
    }
    row["batch"] = r.batch;
    if (plan.workload.decoder) {
      row["time_to_first_token_s"] = r.prediction.latency_s;
      row["time_per_output_token_s"] = target_latency_s(r.prediction);
    } else {
      row["latency_s"] = r.prediction.latency_s;
    }
    row["per_instance_per_s"] = r.per_instance_per_s;
    row["instances"] = static_cast<std::int64_t>(r.instances);
    row["usd_per_hour"] = optional(r.usd_per_hour);
    row["usd_per_million"] = optional(r.usd_per_million);
    row["batch_limited_by"] = to_string(r.limit);
    row["cheapest"] = r.cheapest;
    rows.push_back(std::move(row));
  }
  return {{"workload", workload_to_json(plan.workload)},
          {"load",
           {{"unit", l.tokens ? "output_tokens_per_s" : "requests_per_s"},
            {"base_per_s", l.base_per_s},
            {"peak_per_s", l.peak()},
            {"headroom", l.headroom},
            {"growth", l.growth},
            {"required_per_s", l.required_per_s()},
            {"max_latency_s", l.max_latency_s},
            {"latency_applies_to", plan.workload.decoder ? "output_token" : "batch"}}},
          {"usd_per_million_of", unit_of_cost(plan.load)},
          {"rows", rows}};
}

}  // namespace truepeak::report
