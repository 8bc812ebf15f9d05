// Theoretical peaks of a CPU from what the backend read: ISA flags, cores, clock and model name.
// Pure: everything comes from the DeviceDescription, so tests can feed synthetic properties.
//
//   f32 FMA peak = cores x GHz x FMA units x f32 lanes x 2 (multiply + add)
//   bf16: AMX 1024 MAC/cycle/core, else AVX512_BF16 dot products at 2x the f32 rate, else none
//   int8: AMX 2048 MAC/cycle/core, else VNNI (4 MACs per 32-bit lane: 4x the f32 rate), else none
//
// FMA units per core are not visible in /proc/cpuinfo: AVX-512 server parts (Xeon) are taken to
// have 2, others 1; AVX2 cores 2. The clock is cpufreq's maximum where readable, else the "cpu
// MHz" of /proc/cpuinfo (on a VM the nominal clock, so turbo can put measured figures above it).
#include <fmt/format.h>

#include <string>

#include "calibrate/datasheet.hpp"

namespace truepeak {
namespace {

bool flag(const nlohmann::json& properties, const char* name) {
  const auto isa = properties.find("isa");
  if (isa == properties.end() || !isa->is_object()) {
    return false;
  }
  const auto value = isa->find(name);
  return value != isa->end() && value->is_boolean() && value->get<bool>();
}

std::optional<double> number(const nlohmann::json& properties, const char* name) {
  const auto value = properties.find(name);
  if (value == properties.end() || !value->is_number()) {
    return std::nullopt;
  }
  return value->get<double>();
}

}  // namespace

Datasheet cpu_datasheet(const DeviceDescription& device) {
  Datasheet sheet;
  const auto& p = device.properties;
  const auto cores = number(p, "cores");
  const auto max_mhz = number(p, "max_frequency_mhz");
  const auto base_mhz = number(p, "frequency_mhz");
  const auto mhz = max_mhz ? max_mhz : base_mhz;
  if (!cores || !mhz || *cores <= 0 || *mhz <= 0) {
    sheet.source = "no peak derived: the core count or clock of this CPU is unknown";
    return sheet;
  }
  const char* clock_source =
      max_mhz ? "cpufreq cpuinfo_max_freq" : "'cpu MHz' in /proc/cpuinfo (on a VM: nominal clock)";
  const double cycles_per_s = *cores * *mhz * 1e6;

  const bool avx512 = flag(p, "avx512f");
  const bool avx2_fma = flag(p, "avx2") && flag(p, "fma");
  const bool server = device.name.find("Xeon") != std::string::npos;
  int lanes = 1, fma_units = 1;
  std::string vector_note;
  if (avx512) {
    lanes = 16;
    fma_units = server ? 2 : 1;
    vector_note = fmt::format("AVX-512 FMA, 16 f32 lanes, {} FMA unit{} per core (assumed: {})",
                              fma_units, fma_units > 1 ? "s" : "",
                              server ? "2 on server Xeons" : "1 on non-Xeon AVX-512 parts");
  } else if (avx2_fma) {
    lanes = 8;
    fma_units = 2;
    vector_note = "AVX2 FMA, 8 f32 lanes, 2 FMA units per core (assumed)";
  } else {
    lanes = 4;
    fma_units = 1;
    vector_note = "no FMA: SSE multiply + add, 4 f32 lanes (one of each per cycle)";
  }
  const double f32_per_cycle_core = 2.0 * lanes * fma_units;
  const double f32 = cycles_per_s * f32_per_cycle_core;
  sheet.flops_per_s["f32"] = f32;
  sheet.vector_flops_per_s["f32"] = f32;

  std::string bf16_note, int8_note;
  if (flag(p, "amx_bf16")) {
    sheet.flops_per_s["bf16"] = cycles_per_s * 2.0 * 1024;
    bf16_note = "bf16: AMX, 1024 MAC/cycle/core";
  } else if (flag(p, "avx512_bf16")) {
    sheet.flops_per_s["bf16"] = 2.0 * f32;
    bf16_note = "bf16: AVX512_BF16 dot products, 2x the f32 rate";
  } else {
    bf16_note = "bf16: no bf16 instructions (no peak)";
  }
  if (flag(p, "amx_int8")) {
    sheet.flops_per_s["int8"] = cycles_per_s * 2.0 * 2048;
    int8_note = "int8: AMX, 2048 MAC/cycle/core";
  } else if (flag(p, "avx512_vnni") && avx512) {
    sheet.flops_per_s["int8"] = 4.0 * f32;
    int8_note = "int8: AVX512_VNNI, 4 MACs per 32-bit lane, 4x the f32 rate";
  } else if (flag(p, "avx_vnni") && avx2_fma) {
    sheet.flops_per_s["int8"] = 4.0 * f32;
    int8_note = "int8: AVX_VNNI, 4 MACs per 32-bit lane, 4x the f32 rate";
  } else {
    int8_note = "int8: no VNNI/AMX (no peak)";
  }

  // Memory bandwidth needs channels and DIMM speed, which need root (dmidecode): not derived.
  sheet.memory_Bps.reset();
  sheet.source = fmt::format(
      "derived: {} cores x {:.0f} MHz ({}) x {} x 2 = {:.1f} GFLOP/s f32; {}; {}; memory bandwidth "
      "not derivable (memory channels and speed are not readable without root)",
      *cores, *mhz, clock_source, vector_note, f32 / 1e9, bf16_note, int8_note);
  return sheet;
}

}  // namespace truepeak
