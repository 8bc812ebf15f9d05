// Figures derived from a profile that several printers share (compare, export, report): the
// best measured rate per dtype, the bandwidth of a memory level, ratios that stay empty when
// either side is missing. Rates are never recomputed here; they come from the profile.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/profile.hpp"

namespace truepeak::report {

// One device of one profile, named "<machine label>/<device id>".
struct DeviceView {
  const Profile* profile = nullptr;
  const Device* device = nullptr;
  std::string label;
};

// Every device of every profile, in order.
std::vector<DeviceView> all_devices(const std::vector<Profile>& profiles);

// The device with `id`, or, when `id` is empty, the first GPU, else the first device.
// Throws InputError naming the profile and the devices it has.
const Device& pick_device(const Profile& profile, const std::string& id, const std::string& where);

// Names in the order of DType (f64, f32, ..., int8), names that are no dtype last; stable.
std::vector<std::string> in_dtype_order(std::vector<std::string> names);
// Dtypes with a GEMM figure (peaks or points), in the order of DType (f64, f32, ..., int8).
std::vector<std::string> gemm_dtypes(const Device& device);
// peaks.flops_per_s[dtype], else the fastest GEMM point of that dtype.
std::optional<double> best_gemm_flops_per_s(const Device& device, const std::string& dtype);
std::optional<double> datasheet_flops_per_s(const Device& device, const std::string& dtype);
// Dtypes with a convolution point, in the order of DType.
std::vector<std::string> conv_dtypes(const Device& device);
// The best rate among `points` (GemmPoint or ConvPoint) of `dtype` with warm weights.
template <typename Point>
std::optional<double> best_warm_flops_per_s(const std::vector<Point>& points, const std::string& dtype) {
  std::optional<double> best;
  for (const auto& p : points) {
    if (!p.cold_weights && to_string(p.shape.dtype) == dtype && (!best || p.flops_per_s > *best))
      best = p.flops_per_s;
  }
  return best;
}
// The fastest convolution layer of that dtype (warm weights), a headline figure of its own.
std::optional<double> best_conv_flops_per_s(const Device& device, const std::string& dtype);

// Memory levels ordered L1, L2, L3, DRAM, HBM, then any other name.
std::vector<std::string> ordered_level_names(const std::vector<std::string>& names);
std::optional<double> level_Bps(const Device& device, const std::string& name);
// Main memory (DRAM/HBM): peaks.memory_Bps, else the DRAM or HBM level.
std::optional<double> main_memory_Bps(const Device& device);
// Which level holds main memory on this device: "HBM" on a GPU, "DRAM" otherwise.
std::string main_memory_level(const Device& device);

// a / b when both are present and b > 0.
std::optional<double> ratio(std::optional<double> a, std::optional<double> b);

// The runtimes of every device, a short section each (framework, threads, dtypes, per-op cost,
// own kernels, layout, points); empty when the profile has none.
std::string runtimes_summary(const Profile& profile);
// One line on a runtime's layout: "plain", or what runs blocked and what a change costs.
std::string runtime_layout_summary(const RuntimeRecord& record);
// One line on where a runtime with a convolution dispatch rule runs small convolutions, the
// conditions, and how many of its conv points ran there; the record must have the rule.
std::string runtime_dispatch_summary(const RuntimeRecord& record);
// One line on how far the host's speed moved while the runtime was measured, from the host
// probe's moments among its raw points; "" without two of them.
std::string runtime_host_summary(const RuntimeRecord& record);
// Every runtime key present on any device of these profiles, sorted.
std::vector<std::string> runtime_keys(const std::vector<Profile>& profiles);

// A name safe for file names and other tools' identifiers: [A-Za-z0-9_-], others become '-'.
std::string slug(const std::string& text);

}  // namespace truepeak::report
