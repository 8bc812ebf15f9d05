// Calculon looks efficiencies up by op size: the first [threshold, efficiency] entry whose
// threshold is <= the op's GFLOP (or MB) applies, thresholds strictly decreasing, the last one 0,
// every efficiency in (0, 1]. The tables are built from the measured points so that Calculon's
// peak x efficiency reproduces each measured rate.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/dtype.hpp"
#include "report/export.hpp"
#include "report/summary.hpp"

namespace truepeak::report {
namespace {

using ordered_json = nlohmann::ordered_json;

// Calculon's datatype names (System.TypeSizes); tf32 and int8 have none.
std::optional<std::string> calculon_dtype(const std::string& dtype) {
  static const std::map<std::string, std::string> kNames = {
      {"f32", "float32"}, {"f16", "float16"}, {"bf16", "bfloat16"}, {"fp8", "float8"}};
  auto it = kNames.find(dtype);
  return it == kNames.end() ? std::nullopt : std::optional<std::string>(it->second);
}

struct SizedRate {
  double size;  // GFLOP or MB
  double rate;  // FLOP/s or B/s
};

// [[size, rate / peak], ...] with sizes descending and unique (best rate per size), the smallest
// measured size moved to 0 so that smaller ops take the smallest measured point's efficiency.
ordered_json efficiency_table(std::vector<SizedRate> points, double peak) {
  std::sort(points.begin(), points.end(),
            [](const auto& a, const auto& b) { return a.size > b.size; });
  ordered_json table = ordered_json::array();
  double last_size = -1;
  for (const auto& p : points) {
    const double eff = std::min(1.0, p.rate / peak);
    if (!table.empty() && p.size == last_size) {
      auto& prev = table.back()[1];
      prev = std::max(prev.get<double>(), eff);
      continue;
    }
    table.push_back(ordered_json::array({p.size, eff}));
    last_size = p.size;
  }
  if (!table.empty()) table.back()[0] = 0;
  return table;
}

double max_rate(const std::vector<SizedRate>& points) {
  double best = 0;
  for (const auto& p : points) best = std::max(best, p.rate);
  return best;
}

}  // namespace

ExportResult export_calculon(const Profile& profile, const Device& device) {
  ExportResult result;
  auto& notes = result.notes;
  ordered_json doc;

  // matrix: one entry per dtype Calculon knows, from the GEMM sweep.
  ordered_json matrix = ordered_json::object();
  for (const auto& dtype : gemm_dtypes(device)) {
    const auto name = calculon_dtype(dtype);
    std::vector<SizedRate> points;
    for (const auto& p : device.gemm) {
      if (to_string(p.shape.dtype) == dtype && !p.cold_weights)  // Calculon's table: warm caches
        points.push_back({p.shape.flops() / 1e9, p.flops_per_s});
    }
    if (!name) {
      notes.push_back(fmt::format("matrix {}: Calculon has no such datatype; left out", dtype));
      continue;
    }
    if (points.empty()) {
      notes.push_back(fmt::format("matrix {}: a peak but no GEMM sweep; left out", *name));
      continue;
    }
    // The peak written is the datasheet's, unless a point beat it (turbo): efficiencies must stay
    // <= 1.
    double peak = datasheet_flops_per_s(device, dtype).value_or(0);
    if (max_rate(points) > peak) {
      notes.push_back(
          fmt::format("matrix {}: {}; tflops is the best measured rate", *name,
                      peak > 0 ? "measured above the datasheet figure" : "no datasheet figure"));
      peak = max_rate(points);
    }
    matrix[*name] = {{"tflops", peak / 1e12},
                     {"gflops_efficiency", efficiency_table(points, peak)}};
  }
  doc["matrix"] = matrix;

  // vector: the own FMA kernel gives one figure per dtype, not a sweep: a single-entry table.
  ordered_json vector = ordered_json::object();
  for (const auto& [dtype, measured] : device.peaks.vector_flops_per_s) {
    const auto name = calculon_dtype(dtype);
    if (!name) continue;
    double peak = 0;
    if (auto it = device.datasheet.vector_flops_per_s.find(dtype);
        it != device.datasheet.vector_flops_per_s.end()) {
      peak = it->second;
    }
    peak = std::max(peak, measured);
    vector[*name] = {
        {"tflops", peak / 1e12},
        {"gflops_efficiency", ordered_json::array({ordered_json::array({0, measured / peak})})}};
  }
  doc["vector"] = vector;
  notes.push_back(
      "vector: one measured figure per dtype (no size sweep), so one [0, efficiency] entry each");

  // mem1: device memory, efficiency against working-set size from the sweep (best kernel per size).
  std::map<std::int64_t, double> best_per_size;
  for (const auto& p : device.memory_sweep)
    best_per_size[p.bytes] = std::max(best_per_size[p.bytes], p.Bps);
  const auto main_Bps = main_memory_Bps(device);
  if (main_Bps) {
    const double peak = std::max(device.datasheet.memory_Bps.value_or(0), *main_Bps);
    std::vector<SizedRate> points;
    for (const auto& [bytes, Bps] : best_per_size) points.push_back({bytes / 1e6, Bps});
    if (points.empty()) points.push_back({0, *main_Bps});
    ordered_json mem1;
    mem1["GiB"] = device.memory_bytes
                      ? ordered_json(static_cast<double>(*device.memory_bytes) / double(1LL << 30))
                      : ordered_json(nullptr);
    mem1["GBps"] = peak / 1e9;
    mem1["MB_efficiency"] = efficiency_table(points, peak);
    doc["mem1"] = mem1;
    notes.push_back(fmt::format(
        "mem1: GBps {} ({:.4g} GB/s); working sets served by a cache above it capped at 1.0",
        device.datasheet.memory_Bps ? "is the datasheet figure" : "is the measured figure",
        peak / 1e9));
  } else {
    notes.push_back("mem1: no main-memory bandwidth measured; left out (Calculon requires it)");
  }

  // mem2: Calculon's offload memory is host memory behind the host link: the pinned h2d transfers.
  if (auto it = device.transfers.find("h2d_pinned");
      it != device.transfers.end() && it->second.Bps) {
    const auto& fit = it->second;
    std::vector<SizedRate> points;
    for (const auto& p : fit.points) {
      if (p.time_s > 0) points.push_back({p.bytes / 1e6, p.bytes / p.time_s});
    }
    if (points.empty()) points.push_back({0, *fit.Bps});
    const double peak = std::max(*fit.Bps, max_rate(points));
    ordered_json mem2;
    mem2["GiB"] =
        profile.machine.memory_bytes
            ? ordered_json(static_cast<double>(*profile.machine.memory_bytes) / double(1LL << 30))
            : ordered_json(nullptr);
    mem2["GBps"] = peak / 1e9;
    mem2["MB_efficiency"] = efficiency_table(points, peak);
    doc["mem2"] = mem2;
  } else {
    notes.push_back(
        "mem2: no host transfers measured on this device; left out (add one by hand for Calculon)");
  }

  // truepeak's estimator overlaps compute and memory (time = max of the two), as Calculon's
  // roofline mode.
  doc["processing_mode"] = "roofline";
  doc["networks"] = ordered_json::array();
  notes.push_back("networks: not measured by truepeak; empty");
  result.text = doc.dump(2) + "\n";
  return result;
}

}  // namespace truepeak::report
