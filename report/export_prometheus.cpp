// Prometheus text exposition format (version 0.0.4), as node-exporter's textfile collector reads
// it: each family once, its HELP and TYPE lines first, then its samples. Everything is a gauge: a
// profile is a snapshot, re-exported after each calibration.
#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <map>

#include "report/export.hpp"
#include "report/summary.hpp"

namespace truepeak::report {
namespace {

struct Sample {
  std::vector<std::pair<std::string, std::string>> labels;
  double value;
};

struct Family {
  std::string help;
  std::vector<Sample> samples;
};

std::string escape_label(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\\')
      out += "\\\\";
    else if (ch == '"')
      out += "\\\"";
    else if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}

std::string escape_help(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\\')
      out += "\\\\";
    else if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

// An ISO 8601 UTC time (YYYY-MM-DDTHH:MM:SSZ) -> seconds since the epoch; nullopt when it does not parse.
std::optional<double> parse_utc(const std::string& text) {
  std::tm tm{};
  char z = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &z) != 7 ||
      z != 'Z') {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm));
}

}  // namespace

ExportResult export_prometheus(const Profile& profile, const std::vector<const Device*>& devices) {
  std::map<std::string, Family> families;
  auto add = [&](const std::string& name, const std::string& help,
                 std::vector<std::pair<std::string, std::string>> labels,
                 std::optional<double> value) {
    if (!value) return;
    auto& f = families[name];
    f.help = help;
    f.samples.push_back({std::move(labels), *value});
  };
  const std::string machine = profile.machine.label;

  for (const auto* d : devices) {
    const std::vector<std::pair<std::string, std::string>> dev = {
        {"machine", machine}, {"device", d->id}, {"device_kind", d->kind}};
    auto with = [&](std::vector<std::pair<std::string, std::string>> more) {
      auto labels = dev;
      labels.insert(labels.end(), more.begin(), more.end());
      return labels;
    };
    add("truepeak_device_info", "Device description; the value is always 1.",
        with({{"name", d->name}}), 1.0);
    for (const auto& dtype : gemm_dtypes(*d)) {
      add("truepeak_peak_flops_per_second",
          "Best measured rate, FLOP/s (FLOPs = 2 x multiply-adds).",
          with({{"dtype", dtype}, {"kind", "matrix"}}), best_gemm_flops_per_s(*d, dtype));
    }
    for (const auto& [dtype, v] : d->peaks.vector_flops_per_s) {
      add("truepeak_peak_flops_per_second",
          "Best measured rate, FLOP/s (FLOPs = 2 x multiply-adds).",
          with({{"dtype", dtype}, {"kind", "vector"}}), v);
    }
    for (const auto& [dtype, v] : d->datasheet.flops_per_s) {
      add("truepeak_datasheet_flops_per_second", "Datasheet or derived peak, FLOP/s.",
          with({{"dtype", dtype}, {"kind", "matrix"}}), v);
      add("truepeak_flops_efficiency_ratio", "Best measured rate over the datasheet peak.",
          with({{"dtype", dtype}, {"kind", "matrix"}}), ratio(best_gemm_flops_per_s(*d, dtype), v));
    }
    for (const auto& [dtype, v] : d->datasheet.vector_flops_per_s) {
      add("truepeak_datasheet_flops_per_second", "Datasheet or derived peak, FLOP/s.",
          with({{"dtype", dtype}, {"kind", "vector"}}), v);
      auto it = d->peaks.vector_flops_per_s.find(dtype);
      add("truepeak_flops_efficiency_ratio", "Best measured rate over the datasheet peak.",
          with({{"dtype", dtype}, {"kind", "vector"}}),
          ratio(it == d->peaks.vector_flops_per_s.end() ? std::nullopt
                                                        : std::optional<double>(it->second),
                v));
    }
    for (const auto& l : d->memory_levels) {
      add("truepeak_memory_bandwidth_bytes_per_second",
          "Measured bandwidth of a memory level (bytes read + written).", with({{"kind", l.name}}),
          l.Bps);
    }
    const auto level = main_memory_level(*d);
    add("truepeak_datasheet_memory_bandwidth_bytes_per_second",
        "Datasheet or derived main-memory bandwidth.", with({{"kind", level}}),
        d->datasheet.memory_Bps);
    add("truepeak_memory_efficiency_ratio",
        "Measured main-memory bandwidth over the datasheet figure.", with({{"kind", level}}),
        ratio(main_memory_Bps(*d), d->datasheet.memory_Bps));
    for (const auto& [name, fit] : d->transfers) {
      add("truepeak_transfer_bandwidth_bytes_per_second",
          "Host-device transfer bandwidth from the latency+bandwidth fit.", with({{"kind", name}}),
          fit.Bps);
      add("truepeak_transfer_latency_seconds",
          "Host-device transfer latency from the latency+bandwidth fit.", with({{"kind", name}}),
          fit.latency_s);
    }
    add("truepeak_transfer_bandwidth_bytes_per_second",
        "Host-device transfer bandwidth from the latency+bandwidth fit.",
        with({{"kind", "bidirectional"}}), d->bidirectional_Bps);
    add("truepeak_op_overhead_seconds", "Fixed cost of one operation (launch or dispatch).",
        with({{"kind", "op"}}), d->overhead_op_s);
    add("truepeak_op_overhead_seconds", "Fixed cost of one operation (launch or dispatch).",
        with({{"kind", "graph_op"}}), d->overhead_graph_op_s);
    if (d->memory_bytes) {
      add("truepeak_device_memory_bytes", "Device memory capacity.", dev,
          static_cast<double>(*d->memory_bytes));
    }
  }
  add("truepeak_profile_created_timestamp_seconds", "When the profile was written (Unix time).",
      {{"machine", machine}}, parse_utc(profile.created_utc));
  add("truepeak_profile_complete", "1 when the calibration finished every planned measurement.",
      {{"machine", machine}}, profile.complete ? 1.0 : 0.0);
  if (profile.machine.price_per_hour_usd) {
    add("truepeak_price_per_hour_usd", "Price of the machine per hour, as given at calibration.",
        {{"machine", machine}}, profile.machine.price_per_hour_usd);
  }

  std::string out;
  std::size_t count = 0;
  for (const auto& [name, f] : families) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, escape_help(f.help), name);
    for (const auto& s : f.samples) {
      std::string labels;
      for (const auto& [k, v] : s.labels)
        labels += fmt::format("{}{}=\"{}\"", labels.empty() ? "" : ",", k, escape_label(v));
      out += fmt::format("{}{{{}}} {}\n", name, labels, format_value(s.value));
      ++count;
    }
  }
  return {out, {fmt::format("{} samples in {} metric families", count, families.size())}, {}};
}

}  // namespace truepeak::report
