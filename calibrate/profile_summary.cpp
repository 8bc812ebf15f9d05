#include "calibrate/profile_summary.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/backend.hpp"
#include "core/table.hpp"
#include "core/units.hpp"

namespace truepeak {
namespace {

constexpr const char* kNone = "-";

std::string ratio(double measured, std::optional<double> reference) {
  if (!reference || *reference <= 0) return kNone;
  return format_percent(measured / *reference);
}

std::optional<double> lookup(const std::map<std::string, double>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? std::nullopt : std::optional<double>(it->second);
}

std::string device_summary(const Device& d) {
  std::string libs;
  for (const auto& [name, version] : d.libraries.items()) {
    if (!version.is_null()) libs += fmt::format("{}{} {}", libs.empty() ? "" : ", ", name, version.is_string() ? version.get<std::string>() : version.dump());
  }
  std::string out = fmt::format("{} ({}): {}{}\n", d.id, d.kind, d.name, libs.empty() ? "" : " [" + libs + "]");

  TextTable t({"figure", "measured", "datasheet", "ratio"});
  for (const auto& [dtype, rate] : d.peaks.flops_per_s) {
    const auto ds = lookup(d.datasheet.flops_per_s, dtype);
    t.add_row({"GEMM " + dtype, format_flops_per_s(rate), ds ? format_flops_per_s(*ds) : kNone, ratio(rate, ds)});
  }
  // Best conv per dtype (warm weights), against the same dtype's dense peak.
  std::map<std::string, const ConvPoint*> conv_best;
  for (const auto& p : d.conv) {
    if (p.cold_weights) continue;
    const ConvPoint*& best = conv_best[std::string(to_string(p.shape.dtype))];
    if (!best || p.flops_per_s > best->flops_per_s) best = &p;
  }
  // A best layer above the datasheet: its counted FLOPs include the taps on the padding, which a
  // kernel may skip (oneDNN's do), and a Winograd or FFT algorithm (cuDNN's) multiplies less.
  std::string padding_notes;
  for (const auto& [dtype, best] : conv_best) {
    const double rate = best->flops_per_s;
    const auto ds = lookup(d.datasheet.flops_per_s, dtype);
    t.add_row({"conv " + dtype + " (best layer)", format_flops_per_s(rate), ds ? format_flops_per_s(*ds) : kNone,
               ratio(rate, ds)});
    const ConvShape& shape = best->shape;
    // What ran, not the candidates' search that follows the first ';'.
    const std::string impl = best->impl.substr(0, best->impl.find(';'));
    const double inside = shape.inside_tap_share();
    if (ds && rate > *ds && inside < 1)
      padding_notes += fmt::format(
          "conv {} (best layer) {}: FLOPs counted over the whole padded window, as frameworks "
          "count them; {:.0f}% of its taps fall on the input ({} on it); a kernel may skip the "
          "rest, or multiply less (Winograd, FFT); it ran {}\n",
          dtype, shape.str(), 100 * inside, format_flops_per_s(rate * inside),
          impl.empty() ? "an unrecorded implementation" : impl);
  }
  for (const auto& [dtype, rate] : d.peaks.vector_flops_per_s) {
    const auto ds = lookup(d.datasheet.vector_flops_per_s, dtype);
    t.add_row({"vector FMA " + dtype, format_flops_per_s(rate), ds ? format_flops_per_s(*ds) : kNone, ratio(rate, ds)});
  }
  for (const auto& level : d.memory_levels) {
    const bool is_memory = is_device_memory(level.name);
    const auto ds = is_memory ? d.datasheet.memory_Bps : std::nullopt;
    const auto size = level.bytes ? " (" + format_bytes(double(*level.bytes)) + ")" : std::string();
    t.add_row({"triad " + level.name + size, format_Bps(level.Bps), ds ? format_Bps(*ds) : kNone, ratio(level.Bps, ds)});
  }
  for (const auto& p : d.memory_sweep) {
    if (p.kernel == "d2d_copy") {
      t.add_row({"device copy " + format_bytes(double(p.bytes)), format_Bps(p.Bps),
                 d.datasheet.memory_Bps ? format_Bps(*d.datasheet.memory_Bps) : kNone, ratio(p.Bps, d.datasheet.memory_Bps)});
    }
  }
  if (d.overhead_op_s) t.add_row({"per-op overhead", format_time_s(*d.overhead_op_s), kNone, kNone});
  if (d.overhead_graph_op_s) t.add_row({"per-op overhead (graph)", format_time_s(*d.overhead_graph_op_s), kNone, kNone});
  std::optional<double> link;
  if (d.properties.contains("pcie_link_Bps") && d.properties["pcie_link_Bps"].is_number()) {
    link = d.properties["pcie_link_Bps"].get<double>();
  }
  for (const auto& [name, fit] : d.transfers) {
    if (!fit.Bps) continue;
    t.add_row({"transfer " + name, format_Bps(*fit.Bps) + (fit.latency_s ? " + " + format_time_s(*fit.latency_s) : ""),
               link ? format_Bps(*link) : kNone, ratio(*fit.Bps, link)});
  }
  if (d.bidirectional_Bps) {
    t.add_row({"transfer bidirectional", format_Bps(*d.bidirectional_Bps), link ? format_Bps(2 * *link) : kNone,
               ratio(*d.bidirectional_Bps, link ? std::optional<double>(2 * *link) : std::nullopt)});
  }
  out += t.str();
  out += padding_notes;
  out += fmt::format("{} GEMM points, {} conv points, {} memory points\n", d.gemm.size(), d.conv.size(),
                     d.memory_sweep.size());
  if (!d.vector_ops.empty()) {
    // One line: each op's element rate per dtype, in DType order, ops in the plan's order.
    std::vector<DType> dtypes;
    for (const auto& v : d.vector_ops)
      if (std::find(dtypes.begin(), dtypes.end(), v.dtype) == dtypes.end()) dtypes.push_back(v.dtype);
    std::sort(dtypes.begin(), dtypes.end());
    std::string names, rates;
    for (const auto dtype : dtypes) names += (names.empty() ? "" : " / ") + std::string(to_string(dtype));
    for (const auto& op : vector_op_names()) {
      std::string cells;
      bool any = false;
      for (const auto dtype : dtypes) {
        double best = 0;
        for (const auto& v : d.vector_ops)
          if (v.op == op && v.dtype == dtype) best = std::max(best, v.elements_per_s);
        any = any || best > 0;
        cells += (cells.empty() ? "" : " / ") + (best > 0 ? fmt::format("{:.2f}", best / 1e9) : std::string(kNone));
      }
      if (any) rates += fmt::format("{}{} {}", rates.empty() ? "" : ", ", op, cells);
    }
    out += fmt::format("vector ops, G elements/s ({}): {}\n", names, rates);
  }
  if (!d.datasheet.source.empty()) out += "datasheet: " + d.datasheet.source + "\n";
  if (d.conditions.contains("sentinel")) {
    const auto& s = d.conditions["sentinel"];
    if (s.contains("probe_cv")) {
      out += fmt::format("interference: sentinel {} slow of {} probes (cv {:.1f}%), {} points re-measured\n",
                         s.value("slow_probes", 0), s.value("probes", 0), 100 * s.value("probe_cv", 0.0),
                         s.value("points_remeasured", 0));
    }
  }
  if (d.conditions.contains("elapsed_s") && d.conditions["elapsed_s"].is_number()) {
    std::string line = fmt::format("run: {:.0f} s", d.conditions["elapsed_s"].get<double>());
    if (d.conditions.contains("deadline_s") && d.conditions["deadline_s"].is_number())
      line += fmt::format(" (goal {:.0f} s)", d.conditions["deadline_s"].get<double>());
    // What gave way to the goal, when anything did.
    if (d.conditions.contains("left_out_for_deadline") && d.conditions["left_out_for_deadline"].is_object()) {
      const auto& left = d.conditions["left_out_for_deadline"];
      std::vector<std::string> parts;
      for (const auto& [key, what] : {std::pair{"second_looks", "second look"}, std::pair{"last_looks", "last look"},
                                      std::pair{"remeasures", "re-measure"}}) {
        const int n = left.value(key, 0);
        if (n > 0) parts.push_back(fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"));
      }
      if (const double wait = left.value("quiet_wait_s", 0.0); wait > 0)
        parts.push_back(fmt::format("{:.1f} s of the wait for a quiet machine", wait));
      if (const int cut = left.value("budgets_cut", 0); cut > 0)
        parts.push_back(fmt::format("part of the time budget of {} point{}", cut, cut == 1 ? "" : "s"));
      if (!parts.empty()) line += ", left out for the goal: " + fmt::format("{}", fmt::join(parts, ", "));
    }
    out += line + "\n";
  }
  for (const auto& s : d.skipped) out += fmt::format("skipped {}: {}\n", s.what, s.reason);
  return out;
}

}  // namespace

std::string profile_summary(const Profile& profile) {
  std::string out = fmt::format("truepeak profile '{}' ({}), {}{}\n", profile.machine.label, profile.machine.hostname,
                                profile.created_utc, profile.complete ? "" : " - INCOMPLETE (interrupted)");
  if (!profile.machine.cpu_model.empty()) {
    out += fmt::format("machine: {}, {} cores, {}\n", profile.machine.cpu_model, profile.machine.cpu_cores,
                       profile.machine.memory_bytes ? format_bytes(double(*profile.machine.memory_bytes)) : "memory unknown");
  }
  for (const auto& d : profile.devices) {
    out += '\n';
    out += device_summary(d);
  }
  return out;
}

}  // namespace truepeak
