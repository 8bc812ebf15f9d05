#include "report/summary.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"

namespace truepeak::report {

std::vector<DeviceView> all_devices(const std::vector<Profile>& profiles) {
  std::vector<DeviceView> out;
  for (const auto& p : profiles) {
    for (const auto& d : p.devices) out.push_back({&p, &d, p.machine.label + "/" + d.id});
  }
  return out;
}

const Device& pick_device(const Profile& profile, const std::string& id, const std::string& where) {
  if (profile.devices.empty())
    throw InputError(fmt::format("{}: the profile has no devices", where));
  if (id.empty()) {
    for (const auto& d : profile.devices) {
      if (d.kind == "gpu") return d;
    }
    return profile.devices.front();
  }
  if (const auto* d = profile.find_device(id)) return *d;
  std::vector<std::string> ids;
  for (const auto& d : profile.devices) ids.push_back(d.id);
  throw InputError(fmt::format("{}: no device '{}' in this profile (it has: {})", where, id,
                               fmt::join(ids, ", ")));
}

namespace {
int dtype_rank(const std::string& name) {
  const auto d = parse_dtype(name);
  return d ? static_cast<int>(*d) : 1000;
}
}  // namespace

std::vector<std::string> in_dtype_order(std::vector<std::string> names) {
  std::stable_sort(names.begin(), names.end(),
                   [](const auto& a, const auto& b) { return dtype_rank(a) < dtype_rank(b); });
  return names;
}

std::vector<std::string> gemm_dtypes(const Device& device) {
  std::set<std::string> names;
  for (const auto& [name, value] : device.peaks.flops_per_s) names.insert(name);
  for (const auto& p : device.gemm) names.insert(std::string(to_string(p.shape.dtype)));
  return in_dtype_order({names.begin(), names.end()});
}

std::optional<double> best_gemm_flops_per_s(const Device& device, const std::string& dtype) {
  if (auto it = device.peaks.flops_per_s.find(dtype); it != device.peaks.flops_per_s.end())
    return it->second;
  std::optional<double> best;
  for (const auto& p : device.gemm) {
    if (to_string(p.shape.dtype) == dtype && (!best || p.flops_per_s > *best)) best = p.flops_per_s;
  }
  return best;
}

std::vector<std::string> conv_dtypes(const Device& device) {
  std::set<std::string> names;
  for (const auto& p : device.conv) names.insert(std::string(to_string(p.shape.dtype)));
  return in_dtype_order({names.begin(), names.end()});
}

std::optional<double> best_conv_flops_per_s(const Device& device, const std::string& dtype) {
  return best_warm_flops_per_s(device.conv, dtype);
}

std::optional<double> datasheet_flops_per_s(const Device& device, const std::string& dtype) {
  if (auto it = device.datasheet.flops_per_s.find(dtype);
      it != device.datasheet.flops_per_s.end()) {
    return it->second;
  }
  return std::nullopt;
}

std::vector<std::string> ordered_level_names(const std::vector<std::string>& names) {
  static const std::vector<std::string> kOrder = {"L1", "L2", "L3", "DRAM", "HBM"};
  auto rank = [](const std::string& n) {
    auto it = std::find(kOrder.begin(), kOrder.end(), n);
    return static_cast<int>(it - kOrder.begin());
  };
  std::vector<std::string> out;
  for (const auto& n : names) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  std::stable_sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : a < b;
  });
  return out;
}

std::optional<double> level_Bps(const Device& device, const std::string& name) {
  for (const auto& l : device.memory_levels) {
    if (l.name == name) return l.Bps;
  }
  return std::nullopt;
}

std::optional<double> main_memory_Bps(const Device& device) {
  if (device.peaks.memory_Bps) return device.peaks.memory_Bps;
  if (auto v = level_Bps(device, "HBM")) return v;
  return level_Bps(device, "DRAM");
}

std::string main_memory_level(const Device& device) {
  if (level_Bps(device, "HBM")) return "HBM";
  if (level_Bps(device, "DRAM")) return "DRAM";
  return device.kind == "gpu" ? "HBM" : "DRAM";
}

std::optional<double> ratio(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *b <= 0) return std::nullopt;
  return *a / *b;
}

std::string slug(const std::string& text) {
  std::string out;
  for (char ch : text) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
    out.push_back(ok ? ch : '-');
  }
  return out;
}

std::string runtime_layout_summary(const RuntimeRecord& r) {
  std::vector<std::string> parts;
  if (!r.layout) {
    parts.push_back("plain");
  } else {
    const auto& l = *r.layout;
    parts.push_back(fmt::format("blocked: {} op kind{}, changes copy {} to plain and {} to blocked",
                                l.blocked_ops.size(), l.blocked_ops.size() == 1 ? "" : "s", l.to_plain_copies,
                                l.to_blocked_copies));
    if (l.expand_broadcast) parts.push_back("broadcasts expanded");
    if (l.broadcast_plain) parts.push_back("broadcasts plain");
    if (!l.group_reorder_widths.empty())
      parts.push_back(fmt::format("groups of {} reordered", fmt::join(l.group_reorder_widths, "/")));
    if (l.conv_channel_multiple > 1)
      parts.push_back(fmt::format("channels of a blocked convolution: a multiple of {}, or up to {} in",
                                  l.conv_channel_multiple, l.conv_small_input_channels));
  }
  parts.push_back("convolutions " + (r.conv_layout.empty() ? std::string("fastest") : r.conv_layout));
  if (r.linears_as_convolutions) parts.push_back("linears as convolutions");
  if (!r.in_place.empty()) parts.push_back(fmt::format("{} in place", r.in_place.size()));
  if (r.fuse_activations)
    parts.push_back(r.fused_activations.empty()
                        ? std::string("activations fused")
                        : fmt::format("activations fused ({})", fmt::join(r.fused_activations, "/")));
  if (r.conv_batchnorm_apart) parts.push_back("a convolution's batch norm apart");
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string runtime_dispatch_summary(const RuntimeRecord& r) {
  const auto& d = *r.conv_dispatch;
  std::vector<std::string> conditions;
  if (d.max_input_elements) conditions.push_back(fmt::format("<= {} input elements", *d.max_input_elements));
  conditions.push_back(fmt::format("<= {} image{}", d.max_batch, d.max_batch == 1 ? "" : "s"));
  conditions.push_back(fmt::format("window <= {} ({} side)", d.max_window,
                                   d.window_smaller_side ? "smaller" : "larger"));
  if (!d.strided) conditions.emplace_back("unstrided");
  if (!d.grouped && !d.depthwise)
    conditions.emplace_back("dense");
  else if (!d.grouped)
    conditions.emplace_back("dense or depthwise");
  else if (!d.depthwise)
    conditions.emplace_back("not depthwise");
  const auto own = std::count_if(r.conv.begin(), r.conv.end(),
                                 [&](const ConvPoint& p) { return p.impl == d.impl; });
  std::string costs;
  if (d.op_s || d.others_op_s)
    costs = fmt::format("; a call takes at least {} there, {} elsewhere",
                        d.op_s ? fmt::format("{:.1f} us", *d.op_s * 1e6) : "?",
                        d.others_op_s ? fmt::format("{:.1f} us", *d.others_op_s * 1e6) : "?");
  return fmt::format("convolutions in {} when {}; {} of the {} conv points there{}", d.impl,
                     fmt::join(conditions, ", "), own, r.conv.size(), costs);
}

namespace {

// The op chains the runtime runs as one kernel, and its compiled graph's call.
std::string runtime_fusion_summary(const RuntimeFusion& f) {
  std::vector<std::string> parts;
  if (f.pointwise) parts.emplace_back("pointwise chains");
  if (f.into_reductions) parts.emplace_back("into norms/softmax");
  if (f.into_products) parts.emplace_back("into products");
  return fmt::format("fuses {}; graph call {}", parts.empty() ? "nothing" : fmt::format("{}", fmt::join(parts, ", ")),
                     format_time_s(f.graph_s));
}

}  // namespace

std::string runtime_host_summary(const RuntimeRecord& r) {
  // The host probe's moments among the raw points (runtimes/harness.py, HostProbe): how far the
  // host's speed moved while the runtime was measured.
  constexpr std::string_view kPrefix = "host ";
  std::vector<double> times;
  std::string name, shape;
  for (const auto& p : r.probes) {
    if (!p.is_object() || !p.contains("name") || !p["name"].is_string() || !p.contains("time_s") ||
        !p["time_s"].is_number())
      continue;
    const auto n = p["name"].get<std::string>();
    const double t = p["time_s"].get<double>();
    if (n.rfind(kPrefix, 0) != 0 || !std::isfinite(t) || t <= 0) continue;
    if (name.empty()) {
      name = n.substr(kPrefix.size());
      if (p.contains("shape") && p["shape"].is_string()) shape = p["shape"].get<std::string>();
    }
    times.push_back(t);
  }
  if (times.size() < 2) return "";
  const auto s = summarize(times);
  return fmt::format("host speed: {}{}{} at {} moments, the slowest {:.2f}x the fastest, the median {:.2f}x", name,
                     shape.empty() ? "" : " ", shape, s.samples, s.max_s / s.min_s, s.median_s / s.min_s);
}

std::string runtimes_summary(const Profile& profile) {
  std::string out;
  for (const auto& d : profile.devices) {
    for (const auto& [key, r] : d.runtimes) {
      if (out.empty()) out += "\nRuntimes\n";
      std::vector<std::string> dtypes;
      for (const auto dt : r.dtypes) dtypes.emplace_back(to_string(dt));
      out += fmt::format("  {} on {}: {}, {} thread{}, {}{}\n", key, d.id, r.framework, r.threads,
                         r.threads == 1 ? "" : "s", fmt::join(dtypes, ", "),
                         r.python.empty() ? "" : " (" + r.python + ")");
      out += fmt::format("    op {}{}; {} own kernel{}; {} gemm and {} conv points of its own\n",
                         format_time_s(r.op_s),
                         r.kind_op_s.empty() ? "" : fmt::format(" ({} kinds differ)", r.kind_op_s.size()),
                         r.own_kernels.size(), r.own_kernels.size() == 1 ? "" : "s", r.gemm.size(), r.conv.size());
      out += fmt::format("    layout: {}\n", runtime_layout_summary(r));
      if (r.fusion) out += fmt::format("    {}\n", runtime_fusion_summary(*r.fusion));
      if (r.conv_dispatch) out += fmt::format("    {}\n", runtime_dispatch_summary(r));
      if (r.cold_op_s) {
        // The kinds' cold costs beside the plain op's: what a pass that outgrows the caches pays.
        std::vector<std::string> kinds;
        for (const auto& c : r.kind_op_s)
          if (c.cold_op_s) kinds.push_back(fmt::format("{} {}", c.kind, format_time_s(*c.cold_op_s)));
        out += fmt::format("    cold calls (a pass that outgrows the caches): op {}{}{}\n", format_time_s(*r.cold_op_s),
                           kinds.empty() ? "" : ", ", fmt::join(kinds, ", "));
      }
      if (const auto host = runtime_host_summary(r); !host.empty()) out += fmt::format("    {}\n", host);
    }
  }
  return out;
}

std::vector<std::string> runtime_keys(const std::vector<Profile>& profiles) {
  std::set<std::string> keys;
  for (const auto& p : profiles)
    for (const auto& d : p.devices)
      for (const auto& [key, record] : d.runtimes) keys.insert(key);
  return {keys.begin(), keys.end()};
}

}  // namespace truepeak::report
