// Calculon's system file (calculon/system.py): matrix and vector engines per datatype, each a peak
// and an efficiency lookup by op size, two memories, networks, a processing mode. Calculon loads
// any top-level key besides its own, so the file carries a "truepeak" object saying where each
// figure came from. Every lookup table: thresholds strictly decreasing, the last 0, every
// efficiency in (0, 1].
#include "report/export_calculon.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/dtype.hpp"
#include "report/export.hpp"
#include "report/summary.hpp"

namespace truepeak::report {
namespace {

using ordered_json = nlohmann::ordered_json;

// Calculon's datatype names (System.TypeSizes); tf32, int8 and f64 have none.
std::optional<std::string> calculon_dtype(const std::string& dtype) {
  static const std::map<std::string, std::string> kNames = {
      {"f32", "float32"}, {"f16", "float16"}, {"bf16", "bfloat16"}, {"fp8", "float8"}};
  auto it = kNames.find(dtype);
  return it == kNames.end() ? std::nullopt : std::optional<std::string>(it->second);
}

// A memory's [[MB, efficiency], ...]: the best rate at each working-set size over `peak`, sizes
// descending, the smallest moved to 0 so that smaller transfers take its efficiency.
ordered_json memory_table(const std::map<double, double>& best_Bps_by_MB, double peak) {
  ordered_json table = ordered_json::array();
  for (auto it = best_Bps_by_MB.rbegin(); it != best_Bps_by_MB.rend(); ++it)
    table.push_back({it->first, std::min(1.0, it->second / peak)});
  if (!table.empty()) table.back()[0] = 0;
  return table;
}

ordered_json to_json(const calculon::Curve& curve) {
  ordered_json table = ordered_json::array();
  for (const auto& [gflop, efficiency] : curve) table.push_back({gflop, efficiency});
  return table;
}

ordered_json matrix_section(const Device& device, std::vector<std::string>& notes) {
  ordered_json matrix = ordered_json::object();
  for (const auto& dtype : gemm_dtypes(device)) {
    const auto name = calculon_dtype(dtype);
    if (!name) {
      notes.push_back(fmt::format("matrix {}: Calculon has no such datatype; left out", dtype));
      continue;
    }
    const DType type = *parse_dtype(dtype);
    double best = 0;
    for (const auto& p : device.gemm) {
      if (p.shape.dtype == type && !p.cold_weights && calculon::aligned(p.shape))
        best = std::max(best, p.flops_per_s);
    }
    if (best <= 0) {
      notes.push_back(fmt::format("matrix {}: no aligned GEMM point measured; left out", *name));
      continue;
    }
    // The datasheet peak, unless a point beat it (turbo): efficiencies must stay <= 1.
    double peak = datasheet_flops_per_s(device, dtype).value_or(0);
    if (best > peak) {
      notes.push_back(
          fmt::format("matrix {}: {}; tflops is the best measured rate", *name,
                      peak > 0 ? "measured above the datasheet figure" : "no datasheet figure"));
      peak = best;
    }
    const auto curve = calculon::gemm_curve(device.gemm, type, peak);
    matrix[*name] = {{"tflops", peak / 1e12}, {"gflops_efficiency", to_json(curve)}};
  }
  return matrix;
}

// The FMA kernel measures one figure per dtype, not a sweep: one [0, efficiency] entry each. A
// dtype the matrix engine has but the FMA kernel did not measure (bf16, fp8) takes the figure of
// the type its elementwise math runs in on these devices: f16 where measured, else f32.
ordered_json vector_section(const Device& device, const ordered_json& matrix,
                            ordered_json& sources) {
  auto entry = [&](const std::string& dtype) -> std::optional<ordered_json> {
    const auto it = device.peaks.vector_flops_per_s.find(dtype);
    if (it == device.peaks.vector_flops_per_s.end() || it->second <= 0) return std::nullopt;
    double peak = it->second;
    if (auto ds = device.datasheet.vector_flops_per_s.find(dtype);
        ds != device.datasheet.vector_flops_per_s.end())
      peak = std::max(peak, ds->second);
    return ordered_json{{"tflops", peak / 1e12},
                        {"gflops_efficiency", ordered_json::array({{0, it->second / peak}})}};
  };
  ordered_json vector = ordered_json::object();
  for (const auto& [dtype, rate] : device.peaks.vector_flops_per_s) {
    const auto name = calculon_dtype(dtype);
    if (!name) continue;
    if (auto e = entry(dtype)) {
      vector[*name] = *e;
      sources[*name] = fmt::format("measured ({} FMA kernel)", dtype);
    }
  }
  for (const auto& [name, unused] : matrix.items()) {
    if (vector.contains(name)) continue;
    for (const char* stand_in : {"f16", "f32"}) {
      if (auto e = entry(stand_in)) {
        vector[name] = *e;
        sources[name] = fmt::format(
            "the {} FMA kernel's figure: no {} FMA measured, its elementwise math runs in {}",
            stand_in, name, stand_in);
        break;
      }
    }
  }
  return vector;
}

ordered_json memory(std::optional<std::int64_t> bytes, double peak_Bps,
                    const std::map<double, double>& best_Bps_by_MB) {
  return {{"GiB", bytes ? ordered_json(static_cast<double>(*bytes) / double(1LL << 30))
                        : ordered_json(nullptr)},
          {"GBps", peak_Bps / 1e9},
          {"MB_efficiency", memory_table(best_Bps_by_MB, peak_Bps)}};
}

}  // namespace

ExportResult export_calculon(const Profile& profile, const Device& device,
                             const CalculonNetworks* networks) {
  ExportResult result;
  auto& notes = result.notes;
  ordered_json doc;
  ordered_json sources = {{"profile", profile.machine.label}, {"device", device.id}};

  doc["matrix"] = matrix_section(device, notes);
  ordered_json vector_sources = ordered_json::object();
  doc["vector"] = vector_section(device, doc["matrix"], vector_sources);
  sources["vector"] = vector_sources;
  for (const auto& [name, source] : vector_sources.items()) {
    if (source.get<std::string>().rfind("measured", 0) != 0)
      notes.push_back(fmt::format("vector {}: {}", name, source.get<std::string>()));
  }
  notes.push_back(
      "matrix: the curve of the aligned GEMM points, fastest at each size, never slower than a "
      "smaller size (docs/exports.md)");

  // mem1: device memory, efficiency against working-set size from the sweep (best kernel per size).
  if (const auto main_Bps = main_memory_Bps(device)) {
    const double peak = std::max(device.datasheet.memory_Bps.value_or(0), *main_Bps);
    std::map<double, double> best;
    for (const auto& p : device.memory_sweep)
      best[p.bytes / 1e6] = std::max(best[p.bytes / 1e6], p.Bps);
    if (best.empty()) best[0] = *main_Bps;
    doc["mem1"] = memory(device.memory_bytes, peak, best);
    notes.push_back(fmt::format(
        "mem1: GBps {} ({:.4g} GB/s); working sets served by a cache above it capped at 1.0",
        device.datasheet.memory_Bps ? "is the datasheet figure" : "is the measured figure",
        peak / 1e9));
  } else {
    notes.push_back("mem1: no main-memory bandwidth measured; left out (Calculon requires it)");
  }

  // mem2: Calculon's offload memory is host memory behind the host link: the pinned h2d copies.
  if (auto it = device.transfers.find("h2d_pinned");
      it != device.transfers.end() && it->second.Bps) {
    std::map<double, double> best;
    for (const auto& p : it->second.points) {
      if (p.time_s > 0) best[p.bytes / 1e6] = std::max(best[p.bytes / 1e6], p.bytes / p.time_s);
    }
    if (best.empty()) best[0] = *it->second.Bps;
    double peak = *it->second.Bps;
    for (const auto& [mb, Bps] : best) peak = std::max(peak, Bps);
    doc["mem2"] = memory(profile.machine.memory_bytes, peak, best);
  } else {
    notes.push_back(
        "mem2: no host transfers measured on this device; left out (add one by hand for Calculon)");
  }

  // truepeak's estimator overlaps compute and memory (time = max of the two), as Calculon's
  // roofline mode does.
  doc["processing_mode"] = "roofline";

  if (networks) {
    doc["networks"] = networks->networks;
    sources["networks"] = "given: " + networks->where;
    notes.push_back(
        fmt::format("networks: {} from {}", networks->networks.size(), networks->where));
  } else if (auto host = calculon::host_link_network(profile, device)) {
    doc["networks"] = ordered_json::array({*host});
    sources["networks"] =
        "measured: the host link (pinned copies both ways), the path of GPUs without a faster link "
        "between them; give yours with --network";
    notes.push_back(fmt::format(
        "networks: the measured host link, {:.4g} GB/s and {:.3g} us, {} processor(s); a faster "
        "link between GPUs (NVLink) was not measured: give it with --network FILE",
        (*host)["bandwidth"].get<double>(), (*host)["latency"].get<double>() * 1e6,
        (*host)["size"].get<std::int64_t>()));
  } else {
    doc["networks"] = ordered_json::array({calculon::placeholder_network()});
    sources["networks"] =
        "placeholder, NOT MEASURED: one processor, so that a one-GPU execution runs; give the "
        "real networks with --network FILE";
    result.warnings.push_back(
        "networks: a placeholder, NOT MEASURED (this device has no host-link figures): it serves "
        "a one-processor execution only; give the real networks with --network FILE");
  }
  doc["truepeak"] = sources;
  result.text = doc.dump(2) + "\n";
  return result;
}

}  // namespace truepeak::report
