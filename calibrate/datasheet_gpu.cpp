// Datasheet peaks of GPUs: a table of NVIDIA's published dense figures (no structured sparsity)
// for common parts, matched by device name; any other GPU gets an estimate from its SM count,
// clock and the per-SM rates of its compute capability, labelled as such. Pure host code.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "calibrate/datasheet.hpp"

namespace truepeak {
namespace {

constexpr double kT = 1e12;

// Figures in TFLOP/s (TOP/s for int8) and GB/s; 0 where the part has no such unit.
struct GpuPart {
  const char* name;                   // for the source line
  std::vector<const char*> tokens;    // every one must be a token of the device name
  std::vector<const char*> excluded;  // none may be
  double min_memory_gb;               // tells 40 GB and 80 GB parts apart when the name does not
  double f32, tf32, f16, bf16, fp8, int8;  // dense matrix peaks (f32 runs on the CUDA cores)
  double vec_f64, vec_f32, vec_f16;        // CUDA-core peaks
  double memory_GBps;
};

// Most specific first: the first match wins.
const std::vector<GpuPart>& parts() {
  static const std::vector<GpuPart> table = {
      {"NVIDIA H200 NVL",
       {"H200", "NVL"},
       {},
       0,
       60,
       417.5,
       835.5,
       835.5,
       1670.5,
       1670.5,
       30,
       60,
       0,
       4800},
      {"NVIDIA H200 SXM",
       {"H200"},
       {},
       0,
       66.9,
       494.7,
       989.4,
       989.4,
       1978.9,
       1978.9,
       33.5,
       66.9,
       133.8,
       4800},
      {"NVIDIA H100 NVL",
       {"H100", "NVL"},
       {},
       0,
       60,
       417.5,
       835.5,
       835.5,
       1670.5,
       1670.5,
       30,
       60,
       0,
       3900},
      {"NVIDIA H100 PCIe",
       {"H100", "PCIE"},
       {},
       0,
       51.2,
       378,
       756,
       756,
       1513,
       1513,
       25.6,
       51.2,
       102.4,
       2000},
      {"NVIDIA H100 SXM",
       {"H100"},
       {},
       0,
       66.9,
       494.7,
       989.4,
       989.4,
       1978.9,
       1978.9,
       33.5,
       66.9,
       133.8,
       3350},
      {"NVIDIA A100 80GB PCIe",
       {"A100", "PCIE"},
       {},
       60,
       19.5,
       156,
       312,
       312,
       0,
       624,
       9.7,
       19.5,
       78,
       1935},
      {"NVIDIA A100 40GB PCIe",
       {"A100", "PCIE"},
       {},
       0,
       19.5,
       156,
       312,
       312,
       0,
       624,
       9.7,
       19.5,
       78,
       1555},
      {"NVIDIA A100 80GB SXM", {"A100"}, {}, 60, 19.5, 156, 312, 312, 0, 624, 9.7, 19.5, 78, 2039},
      {"NVIDIA A100 40GB SXM", {"A100"}, {}, 0, 19.5, 156, 312, 312, 0, 624, 9.7, 19.5, 78, 1555},
      {"NVIDIA A10", {"A10"}, {}, 0, 31.2, 62.5, 125, 125, 0, 250, 0.98, 31.2, 31.2, 600},
      {"NVIDIA L40S", {"L40S"}, {}, 0, 91.6, 183, 362, 362, 733, 733, 1.43, 91.6, 91.6, 864},
      {"NVIDIA L40", {"L40"}, {}, 0, 90.5, 90.5, 181, 181, 362, 362, 1.41, 90.5, 90.5, 864},
      {"NVIDIA L4", {"L4"}, {}, 0, 30.3, 60, 121, 121, 242, 242, 0.47, 30.3, 30.3, 300},
      // GeForce: tensor figures with FP32 accumulation (what cuBLASLt runs here).
      {"NVIDIA GeForce RTX 4090",
       {"RTX", "4090"},
       {},
       0,
       82.6,
       82.6,
       165.2,
       165.2,
       330.3,
       660.6,
       1.29,
       82.6,
       82.6,
       1008},
      {"NVIDIA V100S PCIe", {"V100S"}, {}, 0, 16.4, 0, 130, 0, 0, 0, 8.2, 16.4, 32.8, 1134},
      {"NVIDIA V100 PCIe", {"V100", "PCIE"}, {}, 0, 14, 0, 112, 0, 0, 0, 7, 14, 28, 900},
      {"NVIDIA V100 SXM2", {"V100"}, {}, 0, 15.7, 0, 125, 0, 0, 0, 7.8, 15.7, 31.4, 900},
      {"NVIDIA T4", {"T4"}, {}, 0, 8.1, 0, 65, 0, 0, 130, 0.25, 8.1, 16.2, 320},
      // HGX B200 per GPU; NVIDIA does not list a plain FP32 or FP16 CUDA-core figure.
      {"NVIDIA B200", {"B200"}, {}, 0, 0, 1125, 2250, 2250, 4500, 4500, 37, 0, 0, 8000},
  };
  return table;
}

std::set<std::string> name_tokens(const std::string& name) {
  std::set<std::string> tokens;
  std::string current;
  for (const char ch : name + " ") {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      current += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    } else if (!current.empty()) {
      tokens.insert(current);
      current.clear();
    }
  }
  return tokens;
}

std::optional<double> number(const nlohmann::json& properties, const char* key) {
  const auto it = properties.find(key);
  if (it == properties.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// Per-SM, per-clock rates (FLOPs; FMA = 2) of one compute capability.
struct SmRates {
  int cc;
  double f32, f64, f16_vector, tensor_f16;  // tensor_f16: dense f16/bf16 with f32 accumulation
};

SmRates rates_for(int cc) {
  static const std::vector<SmRates> table = {
      {60, 128, 64, 256, 0},    {61, 256, 8, 4, 0},        {70, 128, 64, 256, 1024},
      {75, 128, 4, 256, 1024},  {80, 128, 64, 512, 2048},  {86, 256, 4, 256, 1024},
      {89, 256, 4, 256, 1024},  {90, 256, 128, 512, 4096}, {100, 256, 128, 512, 8192},
      {120, 256, 4, 256, 1024},
  };
  SmRates best = table.front();
  for (const auto& r : table)
    if (r.cc <= cc) best = r;  // the newest capability at or below this one
  return best;
}

int compute_capability(const DeviceDescription& device) {
  const auto it = device.properties.find("compute_capability");
  if (it == device.properties.end() || !it->is_string()) return 0;
  const std::string text = it->get<std::string>();
  const auto dot = text.find('.');
  try {
    return std::stoi(text.substr(0, dot)) * 10 +
           (dot == std::string::npos ? 0 : std::stoi(text.substr(dot + 1)));
  } catch (...) {
    return 0;
  }
}

Datasheet from_part(const GpuPart& part) {
  Datasheet d;
  const auto put = [](std::map<std::string, double>& to, const char* key, double tera) {
    if (tera > 0) to[key] = tera * kT;
  };
  put(d.flops_per_s, "f32", part.f32);
  put(d.flops_per_s, "tf32", part.tf32);
  put(d.flops_per_s, "f16", part.f16);
  put(d.flops_per_s, "bf16", part.bf16);
  put(d.flops_per_s, "fp8", part.fp8);
  put(d.flops_per_s, "int8", part.int8);
  put(d.vector_flops_per_s, "f64", part.vec_f64);
  put(d.vector_flops_per_s, "f32", part.vec_f32);
  put(d.vector_flops_per_s, "f16", part.vec_f16);
  d.memory_Bps = part.memory_GBps * 1e9;
  d.source = fmt::format("vendor datasheet: {} (dense, no sparsity)", part.name);
  return d;
}

Datasheet estimate(const DeviceDescription& device) {
  Datasheet d;
  const int cc = compute_capability(device);
  const auto sms = number(device.properties, "sms");
  auto clock_mhz = number(device.properties, "max_sm_clock_mhz");
  if (!clock_mhz) clock_mhz = number(device.properties, "sm_clock_mhz");
  std::vector<std::string> notes;
  if (cc > 0 && sms && clock_mhz) {
    const SmRates r = rates_for(cc);
    const double per_clock = *sms * *clock_mhz * 1e6;
    d.vector_flops_per_s["f32"] = r.f32 * per_clock;
    d.vector_flops_per_s["f64"] = r.f64 * per_clock;
    d.vector_flops_per_s["f16"] = r.f16_vector * per_clock;
    d.flops_per_s["f32"] = r.f32 * per_clock;
    if (r.tensor_f16 > 0) {
      d.flops_per_s["f16"] = r.tensor_f16 * per_clock;
      if (cc >= 80) {
        d.flops_per_s["bf16"] = r.tensor_f16 * per_clock;
        d.flops_per_s["tf32"] = r.tensor_f16 / 2 * per_clock;
      }
      if (cc >= 89) d.flops_per_s["fp8"] = 2 * r.tensor_f16 * per_clock;
      if (cc >= 72) d.flops_per_s["int8"] = 2 * r.tensor_f16 * per_clock;
    }
    notes.push_back(
        fmt::format("{:.0f} SMs x {:.0f} MHz x per-SM rates of compute capability {}.{}", *sms,
                    *clock_mhz, cc / 10, cc % 10));
  }
  const auto bus_bits = number(device.properties, "memory_bus_width_bits");
  const auto memory_mhz = number(device.properties, "memory_clock_mhz");
  if (bus_bits && memory_mhz && *bus_bits > 0 && *memory_mhz > 0) {
    // The runtime reports the memory clock such that two transfers per clock give the rate.
    d.memory_Bps = 2 * *memory_mhz * 1e6 * *bus_bits / 8;
    notes.push_back(fmt::format("memory: 2 x {:.0f} MHz x {:.0f}-bit bus", *memory_mhz, *bus_bits));
  }
  d.source =
      notes.empty()
          ? std::string("unknown GPU: no datasheet figures and too few facts to estimate them")
          : fmt::format("estimated from {} (not a known part: {})", fmt::join(notes, "; "),
                        device.name);
  return d;
}

}  // namespace

Datasheet gpu_datasheet(const DeviceDescription& device) {
  const std::set<std::string> tokens = name_tokens(device.name);
  const double memory_gb =
      device.memory_bytes ? static_cast<double>(*device.memory_bytes) / 1e9 : 0;
  for (const auto& part : parts()) {
    const bool all = std::all_of(part.tokens.begin(), part.tokens.end(),
                                 [&](const char* t) { return tokens.count(t) > 0; });
    const bool none = std::none_of(part.excluded.begin(), part.excluded.end(),
                                   [&](const char* t) { return tokens.count(t) > 0; });
    if (all && none && memory_gb >= part.min_memory_gb) return from_part(part);
  }
  return estimate(device);
}

}  // namespace truepeak
