// llm-analysis keeps peak figures and efficiencies apart (achieved = peak x efficiency), so the
// config carries the datasheet peaks and the notes carry the measured efficiencies. It reads the
// config as GPUConfig(**json) (llm_analysis/config.py): a key left out takes its default, an
// explicit null replaces it; mem_per_GPU_in_GB is multiplied by 1024^3, the bandwidths by 1e9.
// It picks the peak by the wider of a run's weight and activation bits: 16 -> peak_fp16_TFLOPS,
// 8 -> peak_i8_TFLOPS, 4 -> peak_i4_TFLOPS, and scales it by one --flops_efficiency.
#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "report/export.hpp"
#include "report/summary.hpp"

namespace truepeak::report {
namespace {

using ordered_json = nlohmann::ordered_json;

// One of llm-analysis's GEMM peaks and the measured dtypes it stands for.
struct GemmClass {
  const char* key;                  // the config's peak field
  const char* dtype_names;          // llm-analysis --dtype_name values that use it
  std::vector<std::string> dtypes;  // measured dtypes of this width, first = the peak's
  std::optional<double> peak;       // datasheet, else the best measured
  bool peak_is_measured = false;
};

GemmClass gemm_class(const Device& device, const char* key, const char* dtype_names,
                     std::initializer_list<const char*> candidates) {
  GemmClass c{key, dtype_names, {}, std::nullopt, false};
  for (const char* dtype : candidates) {
    if (best_gemm_flops_per_s(device, dtype)) c.dtypes.push_back(dtype);
  }
  for (const auto& dtype : c.dtypes) {
    if (auto ds = datasheet_flops_per_s(device, dtype); ds && *ds > 0) {
      c.peak = ds;
      return c;
    }
  }
  for (const auto& dtype : c.dtypes)
    c.peak = std::max(c.peak.value_or(0), *best_gemm_flops_per_s(device, dtype));
  c.peak_is_measured = c.peak.has_value();
  return c;
}

void efficiency_notes(const Device& device, const GemmClass& c, std::vector<std::string>& notes) {
  notes.push_back(fmt::format("  {} ({}):", c.dtype_names, c.key));
  for (const auto& dtype : c.dtypes) {
    const double best = *best_gemm_flops_per_s(device, dtype);
    notes.push_back(fmt::format(
        "    {:<5} --flops_efficiency {:.3f}   (best measured {:.4g} TFLOP/s / {} {:.4g} "
        "TFLOP/s){}",
        dtype, best / *c.peak, best / 1e12, c.peak_is_measured ? "measured" : "datasheet",
        *c.peak / 1e12,
        best > *c.peak ? "; above the datasheet figure (turbo, or a base-clock datasheet)" : ""));
  }
}

// The rate at which the batch-1 GEMMs of `dtype` stream their operands, the slowest and fastest:
// a decode step's products, whose time llm-analysis takes as weights / (HBM x one efficiency).
std::optional<std::pair<double, double>> batch1_Bps(const Device& device,
                                                    const std::string& dtype) {
  std::optional<std::pair<double, double>> range;
  for (const auto& p : device.gemm) {
    if (p.shape.m != 1 || p.shape.batch != 1 || p.cold_weights || p.timing.time_s <= 0 ||
        to_string(p.shape.dtype) != dtype)
      continue;
    const double Bps = p.shape.bytes() / p.timing.time_s;
    range = range ? std::make_pair(std::min(range->first, Bps), std::max(range->second, Bps))
                  : std::make_pair(Bps, Bps);
  }
  return range;
}

}  // namespace

ExportResult export_llm_analysis(const Profile& profile, const Device& device) {
  ExportResult result;
  auto sixteen = gemm_class(device, "peak_fp16_TFLOPS", "w16a16*, w8a16*, w4a16*", {"f16", "bf16"});
  bool f32_stands_in = false;
  if (!sixteen.peak) {
    sixteen = gemm_class(device, "peak_fp16_TFLOPS", "w16a16*, w8a16*, w4a16*", {"f32"});
    f32_stands_in = true;
  }
  if (!sixteen.peak) {
    throw InputError(fmt::format(
        "{}: no f16, bf16 or f32 GEMM was measured: llm-analysis needs peak_fp16_TFLOPS",
        device.id));
  }
  const auto eight = gemm_class(device, "peak_i8_TFLOPS", "w8a8*, w4a8*", {"int8", "fp8"});
  const auto memory_Bps = main_memory_Bps(device);
  const double memory_peak =
      std::max(device.datasheet.memory_Bps.value_or(0), memory_Bps.value_or(0));
  const auto link = measured_host_link(device);

  // In the order of llm-analysis's own files.
  ordered_json doc;
  doc["name"] = slug(profile.machine.label + "-" + device.id);
  if (device.memory_bytes)
    doc["mem_per_GPU_in_GB"] = static_cast<double>(*device.memory_bytes) / double(1LL << 30);
  if (memory_peak > 0) doc["hbm_bandwidth_in_GB_per_sec"] = memory_peak / 1e9;
  if (link) {
    doc["intra_node_bandwidth_in_GB_per_sec"] = link->Bps / 1e9;
    doc["intra_node_min_message_latency"] = link->latency_s;
  }
  doc["peak_fp16_TFLOPS"] = *sixteen.peak / 1e12;
  if (eight.peak) doc["peak_i8_TFLOPS"] = *eight.peak / 1e12;
  result.text = doc.dump(4) + "\n";

  auto& notes = result.notes;
  notes.push_back(fmt::format(
      "llm-analysis efficiencies measured on {} ({}): pass the one of the GEMM dtype you run",
      device.id, device.name));
  efficiency_notes(device, sixteen, notes);
  if (f32_stands_in)
    notes.push_back("    no 16-bit GEMM measured: peak_fp16_TFLOPS holds the f32 GEMM figure");
  if (eight.peak) {
    efficiency_notes(device, eight, notes);
  } else {
    notes.push_back(
        "  w8a8*, w4a8*: no 8-bit GEMM measured; peak_i8_TFLOPS left out (llm-analysis "
        "takes 2x peak_fp16_TFLOPS)");
  }
  notes.push_back(
      "  w4a4*: no 4-bit GEMM measured; peak_i4_TFLOPS left out (llm-analysis takes 4x "
      "peak_fp16_TFLOPS)");
  if (memory_Bps) {
    notes.push_back(fmt::format(
        "  --hbm_memory_efficiency {:.3f}   ({}: measured {:.4g} GB/s / {} {:.4g} GB/s)",
        *memory_Bps / memory_peak, main_memory_level(device), *memory_Bps / 1e9,
        device.datasheet.memory_Bps ? "datasheet" : "measured", memory_peak / 1e9));
  }
  for (const auto& [key, measured] :
       {std::pair<const char*, bool>{"mem_per_GPU_in_GB", device.memory_bytes.has_value()},
        {"hbm_bandwidth_in_GB_per_sec", memory_peak > 0},
        {"intra_node_bandwidth_in_GB_per_sec and intra_node_min_message_latency",
         link.has_value()}}) {
    if (!measured) {
      notes.push_back(fmt::format(
          "  {}: not measured; left out, and llm-analysis requires it: add it before loading the "
          "file (llm-analysis reads every file of gpu_configs/ when it starts)",
          key));
    }
  }
  if (link) {
    notes.push_back(fmt::format(
        "  intra_node_*: the measured host link ({:.4g} GB/s, {:.3g} us), the path of GPUs without "
        "a faster link; NVLink was not measured: put its figures there for a node that has it",
        link->Bps / 1e9, link->latency_s * 1e6));
  }
  notes.push_back(
      "  inter_node_bandwidth_in_GB_per_sec: not measured; left out (llm-analysis's "
      "default holds)");

  // What the format cannot carry, and what it costs at small batches.
  std::string small;
  for (const auto& dtype : sixteen.dtypes) {
    if (const auto range = batch1_Bps(device, dtype)) {
      small = fmt::format(
          "; batch-1 {} GEMMs stream their operands at {:.4g} to {:.4g} GB/s "
          "({:.0f} to {:.0f}% of {:.4g} GB/s), where llm-analysis takes the "
          "--hbm_memory_efficiency above for every read",
          dtype, range->first / 1e9, range->second / 1e9, 100 * range->first / memory_peak,
          100 * range->second / memory_peak, memory_peak / 1e9);
      break;
    }
  }
  notes.push_back(fmt::format(
      "  not carried: llm-analysis has no per-op cost ({} here) and one efficiency for every GEMM "
      "and every read{}. It predicts small batches (a decode step) faster than this device runs "
      "them: expect the figure of `truepeak estimate --profile PROFILE --model MODEL` "
      "(docs/exports.md compares the two)",
      device.overhead_op_s ? fmt::format("{:.3g} us an op", *device.overhead_op_s * 1e6)
                           : std::string("not measured"),
      small));
  return result;
}

}  // namespace truepeak::report
