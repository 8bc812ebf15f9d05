// llm-analysis keeps peak figures and efficiencies apart (achieved = peak x efficiency), so the
// config carries the datasheet peaks and the notes carry the measured efficiencies.
#include <fmt/format.h>

#include "core/error.hpp"
#include "report/export.hpp"
#include "report/summary.hpp"

namespace truepeak::report {
namespace {

using ordered_json = nlohmann::ordered_json;

// The figure written as the peak: the datasheet one when there is one, else the measured one
// (then the efficiency is 1 by construction, and the notes say so).
struct PeakAndEfficiency {
  std::optional<double> peak;
  std::optional<double> efficiency;
  bool peak_is_measured = false;
};

PeakAndEfficiency split(std::optional<double> measured, std::optional<double> datasheet) {
  if (datasheet && *datasheet > 0) return {datasheet, ratio(measured, datasheet), false};
  if (measured) return {measured, 1.0, true};
  return {};
}

}  // namespace

ExportResult export_llm_analysis(const Profile& profile, const Device& device) {
  ExportResult result;
  // llm-analysis models 16-bit training/inference; take the 16-bit GEMM this device measured.
  std::string dtype;
  for (const char* candidate : {"f16", "bf16", "f32"}) {
    if (best_gemm_flops_per_s(device, candidate)) {
      dtype = candidate;
      break;
    }
  }
  if (dtype.empty()) {
    throw InputError(fmt::format(
        "{}: no f16, bf16 or f32 GEMM was measured: llm-analysis needs peak_fp16_TFLOPS",
        device.id));
  }
  const auto flops =
      split(best_gemm_flops_per_s(device, dtype), datasheet_flops_per_s(device, dtype));
  const auto memory = split(main_memory_Bps(device), device.datasheet.memory_Bps);
  const auto int8 =
      split(best_gemm_flops_per_s(device, "int8"), datasheet_flops_per_s(device, "int8"));

  ordered_json doc;
  doc["name"] = slug(profile.machine.label + "-" + device.id);
  doc["mem_per_GPU_in_GB"] = device.memory_bytes
                                 ? ordered_json(static_cast<double>(*device.memory_bytes) / 1e9)
                                 : ordered_json(nullptr);
  doc["hbm_bandwidth_in_GB_per_sec"] =
      memory.peak ? ordered_json(*memory.peak / 1e9) : ordered_json(nullptr);
  // Interconnects between devices are not measured by truepeak.
  doc["intra_node_bandwidth_in_GB_per_sec"] = nullptr;
  doc["intra_node_min_message_latency"] = nullptr;
  doc["peak_fp16_TFLOPS"] = *flops.peak / 1e12;
  // null lets llm-analysis apply its own default (2x / 4x the fp16 peak).
  doc["peak_i8_TFLOPS"] = int8.peak ? ordered_json(*int8.peak / 1e12) : ordered_json(nullptr);
  doc["peak_i4_TFLOPS"] = nullptr;
  doc["inter_node_bandwidth_in_GB_per_sec"] = nullptr;
  result.text = doc.dump(4) + "\n";

  auto& notes = result.notes;
  notes.push_back(
      fmt::format("llm-analysis efficiencies measured on {} ({}):", device.id, device.name));
  if (flops.efficiency) {
    notes.push_back(
        fmt::format("  --flops_efficiency {:.3f}   ({} GEMM: best measured {:.4g} TFLOP/s / {} "
                    "peak {:.4g} TFLOP/s)",
                    *flops.efficiency, dtype, *best_gemm_flops_per_s(device, dtype) / 1e12,
                    flops.peak_is_measured ? "measured" : "datasheet", *flops.peak / 1e12));
  }
  if (memory.efficiency) {
    notes.push_back(fmt::format(
        "  --hbm_memory_efficiency {:.3f}   ({}: measured {:.4g} GB/s / {} {:.4g} GB/s)",
        *memory.efficiency, main_memory_level(device), *main_memory_Bps(device) / 1e9,
        memory.peak_is_measured ? "measured" : "datasheet", *memory.peak / 1e9));
  } else {
    notes.push_back(
        "  hbm_memory_efficiency: no main-memory bandwidth measured; hbm_bandwidth_in_GB_per_sec "
        "is null");
  }
  if (dtype == "f32")
    notes.push_back("  note: no 16-bit GEMM measured; peak_fp16_TFLOPS holds the f32 GEMM figure");
  if (flops.peak_is_measured)
    notes.push_back("  note: no datasheet peak; peak_fp16_TFLOPS is the measured figure");
  if (flops.efficiency && *flops.efficiency > 1) {
    notes.push_back(
        "  note: measured above the datasheet figure (turbo or a base-clock datasheet); efficiency "
        "> 1");
  }
  notes.push_back("  not measured (null): intra/inter-node bandwidth and latency, peak_i4_TFLOPS" +
                  std::string(int8.peak ? "" : ", peak_i8_TFLOPS"));
  return result;
}

}  // namespace truepeak::report
