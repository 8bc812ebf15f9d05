#include "report/html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

#include "core/dtype.hpp"
#include "core/units.hpp"
#include "report/compare.hpp"
#include "report/html_tables.hpp"
#include "truepeak/version.hpp"

namespace truepeak::report {
namespace {

std::string prefix(const std::vector<DeviceView>& views, const DeviceView& v) {
  return views.size() > 1 ? v.label + " " : std::string();
}

// Palette indices (svg_chart's palette) per dtype, far apart in hue so that the dtypes a GPU
// measures (f32, tf32, f16, bf16, fp8, int8) never share a colour family.
int dtype_color(const std::string& dtype) {
  static constexpr std::pair<std::string_view, int> kColors[] = {
      {"f32", 0}, {"f16", 1}, {"tf32", 2}, {"fp8", 4}, {"f64", 6}, {"int8", 7}, {"bf16", 11}};
  for (const auto& [name, color] : kColors) {
    if (name == dtype) return color;
  }
  return 8;
}

double gemm_intensity(const GemmShape& s) { return s.flops() / s.bytes(); }
double conv_intensity(const ConvShape& s) { return s.flops() / s.bytes(); }

const char* kCss = R"(body{font-family:sans-serif;margin:24px;color:#222;max-width:1280px}
h1{font-size:24px}h2{font-size:19px;margin-top:32px;border-bottom:1px solid #ccc}h3{font-size:16px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}th{background:#f2f2f2}
.text td,.text th{text-align:left}
.ratio{color:#666;font-size:12px}.note{color:#555;font-size:13px}
table{max-width:100%}.kv td{text-align:left;overflow-wrap:anywhere}.kv th{text-align:left}
.kv>tbody>tr>td:first-child{white-space:nowrap}
.records{margin:0;font-size:12px}.records th,.records td{padding:2px 6px}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{border:1px solid #ddd;max-width:100%}
svg{display:block;max-width:100%;height:auto}
code{background:#f5f5f5;padding:1px 4px})";

std::string esc(const std::string& s) { return xml_escape(s); }

std::string format_value(const std::string& unit, double v) {
  if (unit == "flops_per_s") return format_flops_per_s(v);
  if (unit == "Bps") return format_Bps(v);
  if (unit == "s") return format_time_s(v);
  return fmt::format("{:.4g}", v);
}

std::string summary_table(const Comparison& c) {
  std::string out = "<table><tr><th>figure</th>";
  for (const auto& col : c.columns)
    out += "<th>" + esc(col.label) + "<br><span class=\"ratio\">" + esc(col.device_name) +
           "</span></th>";
  out += "</tr>\n";
  for (const auto& row : c.rows) {
    out += "<tr><td>" + esc(row.group + " " + row.name) + "</td>";
    for (std::size_t i = 0; i < c.columns.size(); ++i) {
      const auto& cell = row.cells[i];
      if (!cell.value) {
        out += "<td>-</td>";
        continue;
      }
      out += "<td>" + esc(format_value(row.unit, *cell.value));
      std::string extra;
      if (i > 0) {
        if (auto r = row.ratio_to_first(i)) extra += fmt::format("{:.2f}x first", *r);
      }
      if (auto ds = row.of_datasheet(i)) {
        extra += fmt::format("{}{:.0f}% of datasheet {}", extra.empty() ? "" : ", ", *ds * 100,
                             esc(format_value(row.unit, *cell.datasheet)));
      }
      if (!extra.empty()) out += "<br><span class=\"ratio\">" + extra + "</span>";
      out += "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

// The runtimes calibrated on each device (calibrate --runtime); empty when there are none.
std::string runtimes_section(const std::vector<DeviceView>& views) {
  std::string rows;
  for (const auto& v : views) {
    for (const auto& [key, r] : v.device->runtimes) {
      std::string dtypes;
      for (const auto dt : r.dtypes) dtypes += (dtypes.empty() ? "" : ", ") + std::string(to_string(dt));
      rows += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} / "
          "{}</td><td>{}</td></tr>\n",
          esc(v.label), esc(key), esc(r.framework), r.threads, esc(dtypes), esc(format_time_s(r.op_s)),
          r.own_kernels.size(), r.gemm.size(), r.conv.size(),
          esc(runtime_layout_summary(r) + (r.conv_dispatch ? "; " + runtime_dispatch_summary(r) : "")));
    }
  }
  if (rows.empty()) return {};
  return "<h2>Runtimes</h2>\n<p class=\"note\">What each framework adds to the library's figures "
         "(calibrate --runtime; applied by estimate --runtime).</p>\n<table class=\"text\"><tr><th>device</th>"
         "<th>runtime</th><th>framework</th><th>threads</th><th>dtypes</th><th>op</th><th>own kernels</th>"
         "<th>gemm / conv points</th><th>layout</th></tr>\n" +
         rows + "</table>\n";
}

std::string machine_section(const Profile& p, const std::string& source) {
  const auto& m = p.machine;
  std::vector<KeyValueRow> rows;
  auto row = [&](const std::string& k, const std::string& v) { rows.push_back({k, esc(v)}); };
  row("profile", source);
  row("created (UTC)", p.created_utc);
  row("complete", p.complete ? "yes" : "no (interrupted: some figures missing)");
  row("tool", fmt::format("{} {} ({})", p.tool.name, p.tool.version, p.tool.git_sha));
  row("hostname", m.hostname);
  row("os", m.os);
  row("cpu", fmt::format("{} ({} cores)", m.cpu_model, m.cpu_cores));
  row("memory", m.memory_bytes ? format_bytes(static_cast<double>(*m.memory_bytes)) : "-");
  row("price", m.price_per_hour_usd ? fmt::format("${:.2f}/h", *m.price_per_hour_usd) : "-");
  std::string out = "<h2>Machine " + esc(m.label) + "</h2>\n" + key_value_table(rows);
  for (const auto& d : p.devices) {
    out += "<h3>Device " + esc(d.id) + "</h3>\n" + device_details_table(d);
  }
  bool any_skipped = false;
  for (const auto& d : p.devices) any_skipped = any_skipped || !d.skipped.empty();
  if (any_skipped) {
    out += "<p class=\"note\">Skipped:</p><ul class=\"note\">\n";
    for (const auto& d : p.devices) {
      for (const auto& s : d.skipped)
        out += "<li>" + esc(d.id + ": " + s.what + " — " + s.reason) + "</li>\n";
    }
    out += "</ul>\n";
  }
  return out;
}

std::string chart_div(const Chart& c) {
  return "<div class=\"chart\">" + render_svg(c) + "</div>\n";
}

}  // namespace

Chart roofline_chart(const DeviceView& view) {
  const Device& d = *view.device;
  Chart chart;
  chart.title = "Roofline: " + view.label;
  chart.x = {"arithmetic intensity (FLOP / byte)",
             Scale::log10,
             [](double v) { return fmt::format("{:g}", v); },
             {},
             {}};
  chart.y = {"FLOP/s", Scale::log10, si_label, {}, {}};

  const auto dtypes = gemm_dtypes(d);
  double lo = 1e300, hi = 0;
  auto extend = [&](double ai) {
    lo = std::min(lo, ai);
    hi = std::max(hi, ai);
  };
  for (const auto& p : d.gemm) extend(gemm_intensity(p.shape));
  for (const auto& p : d.conv) extend(conv_intensity(p.shape));
  const auto bw = main_memory_Bps(d);
  const auto ds_bw = d.datasheet.memory_Bps;
  for (const auto& dt : dtypes) {
    if (auto peak = best_gemm_flops_per_s(d, dt); peak && bw) extend(*peak / *bw);
    if (auto peak = datasheet_flops_per_s(d, dt); peak && ds_bw) extend(*peak / *ds_bw);
  }
  if (hi <= 0) {
    lo = 0.1;
    hi = 1000;
  }
  lo /= 4;
  hi *= 4;

  auto ceiling = [&](double peak, double Bps) {
    std::vector<std::pair<double, double>> pts;
    const double ridge = peak / Bps;
    pts.push_back({lo, std::min(peak, lo * Bps)});
    if (ridge > lo && ridge < hi) pts.push_back({ridge, peak});
    pts.push_back({hi, std::min(peak, hi * Bps)});
    return pts;
  };
  // One legend row per dtype; a datasheet that gives no memory bandwidth (a CPU's, derived
  // from clock and instruction width) still gives its compute ceiling, drawn flat.
  for (const auto& dt : dtypes) {
    const int color = dtype_color(dt);
    auto add = [&](const std::string& kind, const std::string& column, Series s) {
      s.name = dt + " " + kind;
      s.color = color;
      s.legend_row = dt;
      s.legend_column = column;
      if (!s.points.empty()) chart.series.push_back(std::move(s));
    };
    if (auto peak = best_gemm_flops_per_s(d, dt); peak && bw)
      add("measured ceiling", "measured", {{}, ceiling(*peak, *bw), true, false, Marker::none});
    if (auto peak = datasheet_flops_per_s(d, dt)) {
      auto points = ds_bw ? ceiling(*peak, *ds_bw)
                          : std::vector<std::pair<double, double>>{{lo, *peak}, {hi, *peak}};
      add("datasheet ceiling", "datasheet", {{}, std::move(points), true, true, Marker::none});
    }
    Series gemm{{}, {}, false, false, Marker::circle};
    for (const auto& p : d.gemm) {
      if (to_string(p.shape.dtype) == dt)
        gemm.points.push_back({gemm_intensity(p.shape), p.flops_per_s});
    }
    add("GEMM", "GEMM", std::move(gemm));
    Series conv{{}, {}, false, false, Marker::triangle};
    for (const auto& p : d.conv) {
      if (to_string(p.shape.dtype) == dt)
        conv.points.push_back({conv_intensity(p.shape), p.flops_per_s});
    }
    add("conv", "conv", std::move(conv));
  }
  return chart;
}

Chart gemm_efficiency_chart(const std::vector<DeviceView>& views) {
  Chart chart;
  chart.title = "GEMM efficiency against size";
  chart.x = {"problem size (FLOPs = 2 m n k batch)", Scale::log10, si_label, {}, {}};
  chart.y = {"fraction of datasheet peak", Scale::linear, percent_label, 0.0, {}};
  bool any_measured_reference = false;
  int position = 0;
  for (const auto& v : views) {
    for (const auto& dt : gemm_dtypes(*v.device)) {
      auto reference = datasheet_flops_per_s(*v.device, dt);
      std::string suffix;
      if (!reference) {
        reference = best_gemm_flops_per_s(*v.device, dt);
        suffix = " (of best measured)";
        any_measured_reference = true;
      }
      // Square problems as a line by size; the other shapes (skinny, small K, batched) as
      // markers of the same colour; cold-weight repeats left out (warm caches here). One device:
      // the dtype's colour, as on its roofline; several: one colour per device and dtype.
      const int color = views.size() == 1 ? dtype_color(dt) : position;
      ++position;
      const auto row = prefix(views, v) + dt + suffix;
      Series square{row + " square", {}, true, false, Marker::circle, color, row, "square"};
      Series other{prefix(views, v) + dt + " other shapes", {}, false, false, Marker::square, color,
                   row, "other"};
      for (const auto& p : v.device->gemm) {
        if (to_string(p.shape.dtype) != dt || !reference || p.cold_weights) continue;
        const bool is_square = p.shape.m == p.shape.n && p.shape.n == p.shape.k && p.shape.batch == 1;
        (is_square ? square : other).points.push_back({p.shape.flops(), p.flops_per_s / *reference});
      }
      std::sort(square.points.begin(), square.points.end());
      for (auto* series : {&square, &other})
        if (!series->points.empty()) chart.series.push_back(std::move(*series));
    }
  }
  double top = 1.0;
  for (const auto& s : chart.series) {
    for (const auto& [x, y] : s.points) top = std::max(top, y);
  }
  chart.y.max = std::ceil(top * 10) / 10;
  if (any_measured_reference) chart.y.title = "fraction of datasheet (or best measured) peak";
  return chart;
}

Chart bandwidth_chart(const std::vector<DeviceView>& views) {
  Chart chart;
  chart.title = "Memory bandwidth against working-set size";
  chart.x = {"working set (bytes)", Scale::log2, bytes_label, {}, {}};
  chart.y = {"bandwidth (bytes/s, read + written)", Scale::log10, si_label, {}, {}};
  int color = 0;
  for (const auto& v : views) {
    std::vector<std::string> kernels;
    double lo = 1e300, hi = 0;
    for (const auto& p : v.device->memory_sweep) {
      if (std::find(kernels.begin(), kernels.end(), p.kernel) == kernels.end())
        kernels.push_back(p.kernel);
      lo = std::min(lo, static_cast<double>(p.bytes));
      hi = std::max(hi, static_cast<double>(p.bytes));
    }
    const int first_color = color;
    for (const auto& k : kernels) {
      Series s{prefix(views, v) + k, {}, true, false, Marker::circle, color++};
      for (const auto& p : v.device->memory_sweep) {
        if (p.kernel == k) s.points.push_back({static_cast<double>(p.bytes), p.Bps});
      }
      // By working set, in whatever order the profile lists its sweep.
      std::sort(s.points.begin(), s.points.end());
      chart.series.push_back(std::move(s));
    }
    if (v.device->datasheet.memory_Bps && hi > 0) {
      chart.series.push_back(
          {prefix(views, v) + "datasheet " + main_memory_level(*v.device),
           {{lo, *v.device->datasheet.memory_Bps}, {hi, *v.device->datasheet.memory_Bps}},
           true,
           true,
           Marker::none,
           first_color});
    }
  }
  return chart;
}

std::optional<Chart> transfer_chart(const std::vector<DeviceView>& views) {
  Chart chart;
  chart.title = "Host-device transfer bandwidth against size";
  chart.x = {"transfer size (bytes)", Scale::log2, bytes_label, {}, {}};
  chart.y = {"bandwidth (bytes/s)", Scale::log10, si_label, {}, {}};
  int color = 0;
  for (const auto& v : views) {
    for (const auto& [name, fit] : v.device->transfers) {
      if (fit.points.empty()) continue;
      const auto row = prefix(views, v) + name;
      Series s{row, {}, true, false, Marker::circle, color, row, "measured"};
      for (const auto& p : fit.points) {
        if (p.time_s > 0) s.points.push_back({static_cast<double>(p.bytes), p.bytes / p.time_s});
      }
      chart.series.push_back(std::move(s));
      if (fit.Bps && fit.latency_s) {
        Series f{row + " fit", {}, true, true, Marker::none, color, row, "fit"};
        for (const auto& p : fit.points) {
          const double b = static_cast<double>(p.bytes);
          f.points.push_back({b, b / (*fit.latency_s + b / *fit.Bps)});
        }
        chart.series.push_back(std::move(f));
      }
      ++color;
    }
  }
  if (chart.series.empty()) return std::nullopt;
  return chart;
}

std::string render_report_html(const std::vector<Profile>& profiles,
                               const std::vector<std::string>& sources) {
  std::vector<std::string> labels;
  for (const auto& p : profiles) labels.push_back(p.machine.label);
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>truepeak "
      "report: " +
      esc(fmt::format("{}", fmt::join(labels, ", "))) + "</title>\n<style>" + kCss +
      "</style></head><body>\n";
  html += "<h1>truepeak report: " + esc(fmt::format("{}", fmt::join(labels, ", "))) + "</h1>\n";
  html += fmt::format(
      "<p class=\"note\">Measured figures are the fastest sample of each point (medians are in the "
      "profile). GB = 1e9 bytes; FLOPs = 2 x multiply-adds; bandwidth counts bytes read + written. "
      "Written by truepeak {}.</p>\n",
      esc(TRUEPEAK_VERSION));

  const auto views = all_devices(profiles);
  const auto comparison = compare_profiles(profiles, {});
  html += "<h2>Summary</h2>\n" + summary_table(comparison);
  html +=
      "<p class=\"note\">\"x first\": ratio to the first column. \"% of datasheet\": measured over "
      "the datasheet "
      "or derived figure of the same device (see each device's datasheet source).</p>\n";

  html +=
      "<h2>Roofline</h2>\n<p class=\"note\">Solid: ceilings from measured peaks and main-memory "
      "bandwidth; dashed: "
      "datasheet (flat where the datasheet gives no memory bandwidth). One colour per dtype. "
      "Points: measured GEMM (circles) and convolution (triangles) problems at their "
      "arithmetic "
      "intensity (FLOPs over minimal bytes moved).</p>\n<div class=\"charts\">\n";
  for (const auto& v : views) html += chart_div(roofline_chart(v));
  html +=
      "</div>\n<h2>GEMM efficiency</h2>\n<p class=\"note\">Lines: square problems (m = n = k, "
      "no batch); markers alone: the other shapes (skinny, small K, batched) of the same dtype. "
      "Repeats with cold weights are left out.</p>\n<div class=\"charts\">\n" +
          chart_div(gemm_efficiency_chart(views)) + "</div>\n";
  html += "<h2>Memory bandwidth</h2>\n<div class=\"charts\">\n" +
          chart_div(bandwidth_chart(views)) + "</div>\n";
  if (auto t = transfer_chart(views)) {
    html += "<h2>Host-device transfers</h2>\n<div class=\"charts\">\n" + chart_div(*t) + "</div>\n";
  }
  html += runtimes_section(views);
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    html += machine_section(profiles[i], i < sources.size() ? sources[i] : std::string());
  }
  html += "</body></html>\n";
  return html;
}

}  // namespace truepeak::report
