// Theoretical peaks of a CPU from what the backend read: ISA flags, cores, clock and model name.
// Pure: everything comes from the DeviceDescription, so tests can feed synthetic properties.
//
//   f32 FMA peak = cores x GHz x FMA units x f32 lanes x 2 (multiply + add)
//   bf16: AMX 1024 MAC/cycle/core, else AVX512_BF16 dot products at 2x the f32 rate, else none
//   int8: AMX 2048 MAC/cycle/core, else VNNI (4 MACs per 32-bit lane: 4x the f32 rate), else none
//
// FMA units per core are not visible in /proc/cpuinfo, so they follow the vendor and family:
// Intel's AVX-512 server parts (Xeon) have 2 512-bit units, its client parts 1; AMD's Zen 4
// (family 0x19) runs 512-bit FMAs on two 256-bit pipes, one 512-bit FMA a cycle; Zen 5 (family
// 0x1A) has two 512-bit pipes, except its mobile "Ryzen AI" parts; AVX2 cores 2. The clock is
// cpufreq's maximum where readable; else (a VM) the larger of the measured clock and the "cpu
// MHz" of /proc/cpuinfo, which a VM shows as the nominal clock while the cores boost above it.
#include <fmt/format.h>

#include <optional>
#include <string>
#include <tuple>
#include <utility>

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

std::optional<std::string> text(const nlohmann::json& properties, const char* name) {
  const auto value = properties.find(name);
  if (value == properties.end() || !value->is_string()) {
    return std::nullopt;
  }
  return value->get<std::string>();
}

bool contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

// 512-bit FMA units per core of an AVX-512 CPU, and why ("per core (...)").
std::pair<int, std::string> avx512_fma_units(const DeviceDescription& device) {
  const auto& p = device.properties;
  const auto vendor = text(p, "vendor").value_or("");
  const auto family = number(p, "family");
  const bool amd = vendor == "AuthenticAMD" || contains(device.name, "AMD");
  if (amd && family && *family == 0x19) {
    return {1, "per core (Zen 4, family 0x19: two 256-bit pipes)"};
  }
  if (amd && family && *family >= 0x1A) {
    if (contains(device.name, "Ryzen AI")) {
      return {1, "per core (assumed: Zen 5 mobile parts run 512-bit FMAs on 256-bit pipes)"};
    }
    return {2, "per core (Zen 5, family 0x1A: two 512-bit pipes)"};
  }
  if (contains(device.name, "Xeon")) {
    return {2, "per core (assumed: 2 on server Xeons)"};
  }
  return {1, "per core (assumed: 1 on client AVX-512 parts)"};
}

}  // namespace

Datasheet cpu_datasheet(const DeviceDescription& device) {
  Datasheet sheet;
  const auto& p = device.properties;
  const auto cores = number(p, "cores");
  const auto max_mhz = number(p, "max_frequency_mhz");
  const auto base_mhz = number(p, "frequency_mhz");
  const auto measured_mhz = number(p, "measured_frequency_mhz");
  std::optional<double> mhz;
  std::string clock_source;
  if (max_mhz) {
    mhz = max_mhz;
    clock_source = "cpufreq cpuinfo_max_freq";
  } else if (measured_mhz && (!base_mhz || *measured_mhz > *base_mhz)) {
    mhz = measured_mhz;
    clock_source = base_mhz ? fmt::format("measured with a dependent add chain; 'cpu MHz' in "
                                          "/proc/cpuinfo says {:.0f}",
                                          *base_mhz)
                            : std::string("measured with a dependent add chain");
  } else if (base_mhz) {
    mhz = base_mhz;
    clock_source = "'cpu MHz' in /proc/cpuinfo (on a VM: nominal clock)";
  }
  if (!cores || !mhz || *cores <= 0 || *mhz <= 0) {
    sheet.source = "no peak derived: the core count or clock of this CPU is unknown";
    return sheet;
  }
  const double cycles_per_s = *cores * *mhz * 1e6;

  const bool avx512 = flag(p, "avx512f");
  const bool avx2_fma = flag(p, "avx2") && flag(p, "fma");
  int lanes = 1, fma_units = 1;
  std::string vector_note;
  if (avx512) {
    lanes = 16;
    std::string why;
    std::tie(fma_units, why) = avx512_fma_units(device);
    vector_note = fmt::format("AVX-512 FMA, 16 f32 lanes, {} FMA unit{} {}", fma_units,
                              fma_units > 1 ? "s" : "", why);
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
