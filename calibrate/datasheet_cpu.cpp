// Theoretical peaks of a CPU from what the backend read: ISA flags, cores, clock, vendor, family
// and model name. Pure: everything comes from the DeviceDescription, so tests can feed synthetic
// properties.
//
//   peak = cores x clock x multiply-adds (MACs) per cycle per core x 2
//
// A multiply-add is two operations, as the kernels count their work (FLOPs = 2 x MACs) and as
// Intel and AMD count "operations per cycle". Every per-cycle rate below names its source. The
// clock is cpufreq's maximum where readable; else (a VM) the larger of the measured clock and
// the "cpu MHz" of /proc/cpuinfo, which a VM shows as the nominal clock while the cores boost
// above it.
#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "calibrate/datasheet.hpp"

namespace truepeak {
namespace {

// Intel AMX issues one tile multiply per 16 cycles per core (Intel 64 and IA-32 Architectures
// Optimization Reference Manual, AMX chapter). With the largest tiles (16 rows of 64 bytes):
//   TDPBF16PS: a 16x32 bf16 tile times a 32x16 one, 16*16*32 = 8192 MACs / 16 = 512 MAC/cycle;
//   TDPBUSD (and TDPBSSD, TDPBSUD, TDPBUUD): 16x64 int8 times 64x16, 16384 MACs / 16 = 1024.
// Intel's "1024 BF16 and 2048 INT8 operations per cycle per core" are these same rates with the
// multiply and the add counted apart. (TDPFP16PS, on parts with amx_fp16, runs at the bf16 rate;
// no f16 peak is derived because the CPU plan measures no f16.)
constexpr double kAmxBf16MacPerCycle = 512;
constexpr double kAmxInt8MacPerCycle = 1024;

// VDPBF16PS on Intel is 4 uops holding ports 0 and 5 for two cycles each (LLVM's Sapphire Rapids
// model, X86SchedSapphireRapids.td, generated from Intel's data): one 512-bit instruction per 2
// cycles, 16 lanes x 2 bf16 MACs / 2 = 16 MAC/cycle, half the f32 FMA rate of a two-unit core.
// A Sapphire Rapids VM with AMX hidden measured 31 FLOP/cycle/core in a bf16 GEMM, against 62
// in f32. Cooper Lake, the one AVX512_BF16 Xeon without AMX, is assumed to match.
constexpr double kIntelAvx512Bf16MacPerCycle = 16;

// Multiply-add rate of one dtype on one core, and where it comes from.
struct Rate {
  double mac_per_cycle = 0;  // 0: no peak derived
  std::string why;
};

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

// Model names differ in case between generations ("Intel(R) Xeon(R) Platinum 8480+", "INTEL(R)
// XEON(R) PLATINUM 8592+"), so they are matched in lower case.
std::string lower(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool is_amd(const DeviceDescription& device) {
  const auto vendor = text(device.properties, "vendor").value_or("");
  return vendor == "AuthenticAMD" || contains(device.name, "AMD");
}

// The four-digit model number after `tier` in a Xeon's lower-case name ("gold 5120": 5120).
std::optional<int> xeon_sku(const std::string& name, const char* tier) {
  auto at = name.find(tier);
  if (at == std::string::npos) return std::nullopt;
  at += std::strlen(tier);
  while (at < name.size() && name[at] == ' ') ++at;
  int sku = 0, digits = 0;
  for (; at < name.size() && digits < 4 && std::isdigit(static_cast<unsigned char>(name[at]));
       ++at, ++digits) {
    sku = sku * 10 + (name[at] - '0');
  }
  return digits == 4 ? std::optional<int>(sku) : std::nullopt;
}

// Skylake-SP and Cascade Lake parts with one 512-bit FMA unit per core: ARK's "# of AVX-512 FMA
// Units" is 1 for every Bronze 3100/3200 and Silver 4100/4200 part, and for the Gold 5100/5200
// parts but the 5122 and 5222. The second digit of the model number is the generation
// (1 Skylake, 2 Cascade Lake, 3 Ice Lake, ...); from Ice Lake on, every Xeon Scalable has 2.
bool xeon_scalable_with_one_fma_unit(const std::string& name) {  // lower case
  const auto first_two_generations = [](int sku) {
    return sku / 100 % 10 == 1 || sku / 100 % 10 == 2;
  };
  for (const char* tier : {"bronze", "silver"}) {
    if (const auto sku = xeon_sku(name, tier); sku && first_two_generations(*sku)) return true;
  }
  const auto gold = xeon_sku(name, "gold");
  return gold && *gold / 1000 == 5 && first_two_generations(*gold) && *gold != 5122 &&
         *gold != 5222;
}

// 512-bit FMA units per core of an AVX-512 CPU, and why ("per core (...)"). /proc/cpuinfo does
// not show them, so they follow the vendor, family and model name.
std::pair<int, std::string> avx512_fma_units(const DeviceDescription& device) {
  const auto family = number(device.properties, "family");
  const auto name = lower(device.name);
  if (is_amd(device) && family && *family == 0x19) {
    // Software Optimization Guide for the AMD Zen4 Microarchitecture: the FP unit's 256-bit
    // pipes run a 512-bit op as two halves, so its two FMA pipes give one 512-bit FMA a cycle.
    return {1, "per core (Zen 4, family 0x19: two 256-bit pipes)"};
  }
  if (is_amd(device) && family && *family >= 0x1A) {
    // Software Optimization Guide for AMD Family 1Ah: two 512-bit FMA pipes. The mobile
    // "Ryzen AI" parts keep 256-bit datapaths, as Zen 4 does.
    if (contains(name, "ryzen ai")) {
      return {1, "per core (assumed: Zen 5 mobile parts run 512-bit FMAs on 256-bit pipes)"};
    }
    return {2, "per core (Zen 5, family 0x1A: two 512-bit pipes)"};
  }
  if (contains(name, "xeon")) {
    if (xeon_scalable_with_one_fma_unit(name)) {
      return {1, "per core (ARK: 1 on Skylake/Cascade Lake Bronze, Silver and Gold 5000 parts)"};
    }
    // Rocket Lake's Xeon E-2300 and W-1300 are client cores: ports 0 and 1 fuse into one unit.
    if (contains(name, " e-23") || contains(name, " w-13")) {
      return {1, "per core (Rocket Lake Xeon E-2300/W-1300: a client core)"};
    }
    return {2,
            "per core (assumed: 2 on server Xeons, as ARK lists for Xeon Scalable Gold 6000, "
            "Platinum and every part from Ice Lake on)"};
  }
  return {1, "per core (assumed: 1 on client AVX-512 parts)"};
}

// 256-bit-equivalent FMA units per core of an AVX2 CPU, and why.
std::pair<int, std::string> avx2_fma_units(const DeviceDescription& device) {
  const auto vendor = text(device.properties, "vendor").value_or("");
  const auto family = number(device.properties, "family");
  const auto model = number(device.properties, "model");
  // Software Optimization Guide for AMD Family 17h Models 00h-0Fh: Zen (and Zen+, Hygon's
  // Dhyana) have two 128-bit FMA pipes, one 256-bit FMA a cycle; Zen 2 (model 0x30 on) widened
  // them to 256 bits.
  if ((is_amd(device) && family && *family == 0x17 && model && *model < 0x30) ||
      (vendor == "HygonGenuine" && family && *family == 0x18)) {
    return {1, "per core (Zen/Zen+: two 128-bit FMA pipes)"};
  }
  return {2, "per core (assumed: Intel Haswell and later, AMD Zen 2 and later)"};
}

std::string per_s(double value, const char* unit) {
  return value >= 1e12 ? fmt::format("{:.2f} T{}/s", value / 1e12, unit)
                       : fmt::format("{:.1f} G{}/s", value / 1e9, unit);
}

}  // namespace

int cpu_datasheet_rule(const std::string& source) {
  constexpr const char* kTag = "(cpu rule ";
  const auto at = source.find(kTag);
  if (at == std::string::npos) return 1;
  int rule = 0;
  for (auto i = at + std::strlen(kTag);
       i < source.size() && std::isdigit(static_cast<unsigned char>(source[i])); ++i) {
    rule = rule * 10 + (source[i] - '0');
  }
  return rule;
}

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
    clock_source = base_mhz ? fmt::format(
                                  "measured with a dependent add chain; 'cpu MHz' in "
                                  "/proc/cpuinfo says {:.0f}",
                                  *base_mhz)
                            : std::string("measured with a dependent add chain");
  } else if (base_mhz) {
    mhz = base_mhz;
    clock_source = "'cpu MHz' in /proc/cpuinfo (on a VM: nominal clock)";
  }
  if (!cores || !mhz || *cores <= 0 || *mhz <= 0) {
    sheet.source =
        fmt::format("no peak derived (cpu rule {}): the core count or clock of this CPU is unknown",
                    kCpuDatasheetRule);
    return sheet;
  }
  const double cycles_per_s = *cores * *mhz * 1e6;

  const bool avx512 = flag(p, "avx512f");
  const bool avx2_fma = flag(p, "avx2") && flag(p, "fma");
  Rate f32;
  if (avx512) {
    const auto [units, why] = avx512_fma_units(device);
    f32 = {16.0 * units, fmt::format("AVX-512 FMA: {} FMA unit{} x 16 f32 lanes {}", units,
                                     units > 1 ? "s" : "", why)};
  } else if (avx2_fma) {
    const auto [units, why] = avx2_fma_units(device);
    f32 = {8.0 * units, fmt::format("AVX2 FMA: {} FMA unit{} x 8 f32 lanes {}", units,
                                    units > 1 ? "s" : "", why)};
  } else {
    // SSE: one 4-lane multiply and one 4-lane add a cycle, the rate of 4 multiply-adds.
    f32 = {4.0, "no FMA: SSE multiply + add, 4 f32 lanes (one of each per cycle)"};
  }

  Rate bf16, int8;
  if (flag(p, "amx_bf16")) {
    bf16 = {kAmxBf16MacPerCycle, "AMX-BF16, 512 MAC/cycle: a 16x16x32 TDPBF16PS per 16 cycles"};
  } else if (flag(p, "avx512_bf16") && avx512) {
    // VDPBF16PS does 2 bf16 MACs per 32-bit lane. AMD's Zen 4 and Zen 5 issue it on the FMA
    // pipes at the FMA rate; Intel's takes two cycles (kIntelAvx512Bf16MacPerCycle).
    bf16 =
        is_amd(device)
            ? Rate{2 * f32.mac_per_cycle,
                   "AVX512_BF16: VDPBF16PS at the FMA rate, 2 MACs per f32 lane"}
            : Rate{
                  kIntelAvx512Bf16MacPerCycle,
                  "AVX512_BF16: one 512-bit VDPBF16PS per 2 cycles on ports 0 and 5, 16 MAC/cycle"};
  } else {
    bf16.why = "no bf16 instructions";
  }
  if (flag(p, "amx_int8")) {
    int8 = {kAmxInt8MacPerCycle, "AMX-INT8, 1024 MAC/cycle: a 16x16x64 TDPBUSD per 16 cycles"};
  } else if (flag(p, "avx512_vnni") && avx512) {
    // VPDPBUSD does 4 u8 x s8 MACs per 32-bit lane and issues on the FMA pipes at the FMA rate:
    // Intel's "256 INT8 operations per cycle" for AVX-512 VNNI on a two-unit Xeon core is
    // 2 x 16 lanes x 4 MACs x 2.
    int8 = {4 * f32.mac_per_cycle, "AVX512_VNNI: VPDPBUSD at the FMA rate, 4 MACs per 32-bit lane"};
  } else if (flag(p, "avx_vnni") && avx2_fma) {
    int8 = {4 * f32.mac_per_cycle, "AVX_VNNI: VPDPBUSD at the FMA rate, 4 MACs per 32-bit lane"};
  } else {
    int8.why = "no VNNI or AMX dot products";
  }

  const auto describe = [&](const char* dtype, const Rate& rate, const char* unit) {
    if (rate.mac_per_cycle <= 0) return fmt::format("{}: no peak ({})", dtype, rate.why);
    return fmt::format("{} {:.0f} {}/cycle/core ({}) = {}", dtype, 2 * rate.mac_per_cycle, unit,
                       rate.why, per_s(cycles_per_s * 2 * rate.mac_per_cycle, unit));
  };
  const double f32_per_s = cycles_per_s * 2 * f32.mac_per_cycle;
  sheet.flops_per_s["f32"] = f32_per_s;
  sheet.vector_flops_per_s["f32"] = f32_per_s;
  if (bf16.mac_per_cycle > 0) sheet.flops_per_s["bf16"] = cycles_per_s * 2 * bf16.mac_per_cycle;
  if (int8.mac_per_cycle > 0) sheet.flops_per_s["int8"] = cycles_per_s * 2 * int8.mac_per_cycle;

  // Intel runs heavy AVX-512 and AMX code at lower frequency levels than scalar code, and no
  // counter readable here says at which; the measured clock comes from scalar adds.
  const bool amx = flag(p, "amx_tile") || flag(p, "amx_bf16") || flag(p, "amx_int8");
  const std::string clock_note =
      amx || avx512 ? fmt::format(
                          "{} code may run below this clock, and the clock it runs at is "
                          "not readable here; ",
                          amx ? "AMX and AVX-512" : "AVX-512")
                    : std::string();
  // Memory bandwidth needs channels and DIMM speed, which need root (dmidecode): not derived.
  sheet.memory_Bps.reset();
  sheet.source = fmt::format(
      "derived (cpu rule {}): {} cores x {:.0f} MHz ({}) x the per-core rate, a multiply-add "
      "counting 2 operations: {}; {}; {}; {}memory bandwidth not derivable (memory channels and "
      "speed are not readable without root)",
      kCpuDatasheetRule, *cores, *mhz, clock_source, describe("f32", f32, "FLOP"),
      describe("bf16", bf16, "FLOP"), describe("int8", int8, "OP"), clock_note);
  return sheet;
}

std::optional<Datasheet> rederived_cpu_datasheet(const Device& device) {
  if (device.kind != "cpu" || cpu_datasheet_rule(device.datasheet.source) >= kCpuDatasheetRule) {
    return std::nullopt;
  }
  DeviceDescription description;
  description.id = device.id;
  description.kind = device.kind;
  description.name = device.name;
  description.libraries = device.libraries;
  description.properties = device.properties;
  description.memory_bytes = device.memory_bytes;
  auto sheet = cpu_datasheet(description);
  sheet.source = fmt::format(
      "re-derived on reading, from the profile's stored properties (its own datasheet came from "
      "cpu rule {}): {}",
      cpu_datasheet_rule(device.datasheet.source), sheet.source);
  return sheet;
}

}  // namespace truepeak
