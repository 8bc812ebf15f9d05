#include "report/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace truepeak::report {
namespace {

// Colour-blind-friendly palette (Okabe-Ito, then a few darker tones).
const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
                          "#000000", "#8C564B", "#7F7F7F", "#BCBD22", "#17BECF", "#9467BD"};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

bool is_log(Scale s) { return s != Scale::linear; }

double transform(Scale s, double v) { return is_log(s) ? std::log10(v) : v; }

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return !(lo <= hi); }
};

// Widens a data range to tick boundaries so the plot starts and ends on a labelled tick.
std::pair<double, double> nice_range(Scale scale, Range r, const Axis& axis) {
  if (r.empty()) r = is_log(scale) ? Range{1, 10} : Range{0, 1};
  double lo = axis.min.value_or(r.lo), hi = axis.max.value_or(r.hi);
  if (is_log(scale)) {
    if (scale == Scale::log10) {
      if (!axis.min) lo = std::pow(10.0, std::floor(std::log10(lo) + 1e-9));
      if (!axis.max) hi = std::pow(10.0, std::ceil(std::log10(hi) - 1e-9));
    } else {
      if (!axis.min) lo = std::pow(2.0, std::floor(std::log2(lo) + 1e-9));
      if (!axis.max) hi = std::pow(2.0, std::ceil(std::log2(hi) - 1e-9));
    }
    if (hi <= lo) hi = lo * (scale == Scale::log10 ? 10 : 2);
  } else {
    if (hi <= lo) hi = lo + 1;
    const auto ticks = axis_ticks(scale, lo, hi);
    if (ticks.size() >= 2) {
      const double step = ticks[1] - ticks[0];
      if (!axis.min) lo = std::floor(lo / step + 1e-9) * step;
      if (!axis.max) hi = std::ceil(hi / step - 1e-9) * step;
    }
  }
  return {lo, hi};
}

std::string format_tick(const Axis& axis, double v) {
  return axis.format ? axis.format(v) : fmt::format("{:g}", v);
}

std::string marker_svg(Marker m, double x, double y, const char* color) {
  switch (m) {
    case Marker::none:
      return {};
    case Marker::circle:
      return fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\" stroke=\"#fff\" "
          "stroke-width=\"0.8\"/>",
          x, y, color);
    case Marker::square:
      return fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"7\" height=\"7\" fill=\"{}\" stroke=\"#fff\" "
          "stroke-width=\"0.8\"/>",
          x - 3.5, y - 3.5, color);
    case Marker::triangle:
      return fmt::format(
          "<path d=\"M{:.1f},{:.1f} L{:.1f},{:.1f} L{:.1f},{:.1f} Z\" fill=\"{}\" stroke=\"#fff\" "
          "stroke-width=\"0.8\"/>",
          x, y - 4.5, x - 4.2, y + 3, x + 4.2, y + 3, color);
  }
  return {};
}

const char* series_color(const Series& s, std::size_t position) {
  return kPalette[(s.color >= 0 ? s.color : static_cast<int>(position)) % kPaletteSize];
}

// A sample of the series' line (when it has one) and marker, centred on (x, y).
std::string legend_sample(const Series& s, const char* color, double x, double y, double width) {
  std::string out;
  if (s.line) {
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"2\"{}/>",
        x - width / 2, y, x + width / 2, y, color, s.dashed ? " stroke-dasharray=\"6,4\"" : "");
  }
  return out + marker_svg(s.marker, x, y, color);
}

// At most `max_chars` characters of `name`; a longer name loses its middle, so that both a
// device prefix and the series' own suffix stay. Cuts fall between UTF-8 characters.
std::string shortened(const std::string& name, std::size_t max_chars) {
  if (name.size() <= max_chars || max_chars < 6) return name;
  auto boundary = [&](std::size_t at) {
    while (at > 0 && at < name.size() && (static_cast<unsigned char>(name[at]) & 0xC0) == 0x80)
      --at;
    return at;
  };
  const std::size_t head = boundary(max_chars * 3 / 8);
  const std::size_t tail = boundary(name.size() - (max_chars - 1 - head));
  return name.substr(0, head) + "…" + name.substr(tail);
}

// Average glyph width of the 12-px sans-serif legend text, to fit names into their space.
constexpr double kCharWidth = 6.6;
constexpr double kRowHeight = 17;

struct LegendBox {
  double x, y, width, bottom;
};

// One entry a line: sample, then the name.
std::string legend_list(const std::vector<Series>& series, const LegendBox& box) {
  std::string svg;
  double ly = box.y;
  for (std::size_t i = 0; i < series.size() && ly <= box.bottom; ++i) {
    const auto& s = series[i];
    if (s.name.empty() || s.points.empty()) continue;
    svg += legend_sample(s, series_color(s, i), box.x + 12, ly, 24);
    const auto name = shortened(s.name, static_cast<std::size_t>((box.width - 30) / kCharWidth));
    svg += fmt::format("<text class=\"legend-entry\" x=\"{}\" y=\"{:.1f}\">{}</text>\n", box.x + 30,
                       ly + 4, xml_escape(name));
    ly += kRowHeight;
  }
  return svg;
}

// A row per group (its name in the group's colour), a column per kind, the kinds named once
// above: a dozen dtypes with four kinds each stay a dozen short lines.
std::string legend_grid(const std::vector<Series>& series, const LegendBox& box) {
  std::vector<std::string> rows, columns;
  std::vector<std::size_t> row_first;  // the series that gives each row its colour
  for (std::size_t i = 0; i < series.size(); ++i) {
    const auto& s = series[i];
    if (s.name.empty() || s.points.empty()) continue;
    if (std::find(rows.begin(), rows.end(), s.legend_row) == rows.end()) {
      rows.push_back(s.legend_row);
      row_first.push_back(i);
    }
    if (std::find(columns.begin(), columns.end(), s.legend_column) == columns.end())
      columns.push_back(s.legend_column);
  }
  if (columns.empty()) return {};
  std::size_t longest = 0;
  for (const auto& r : rows) longest = std::max(longest, r.size());
  // Each column as wide as its name (11-px text) or a sample; the row names get what the
  // columns leave, at least half; space left over is shared out among the columns; when the
  // names need more than there is, every column shrinks alike and names are cut.
  std::vector<double> col_w, centre;
  double wanted = 0;
  for (const auto& c : columns) {
    col_w.push_back(std::max(c.size() * kCharWidth * 11 / 12 + 10, 34.0));
    wanted += col_w.back();
  }
  const double label_w =
      std::clamp(longest * kCharWidth + 8, 40.0, std::max(box.width / 2, box.width - wanted));
  const double room = box.width - label_w;
  for (auto& w : col_w) w = wanted > room ? w * room / wanted : w + (room - wanted) / col_w.size();
  std::string svg;
  double x = box.x + label_w;
  for (std::size_t c = 0; c < columns.size(); x += col_w[c], ++c) {
    centre.push_back(x + col_w[c] / 2);
    svg += fmt::format(
        "<text class=\"legend-column\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" "
        "font-size=\"11\" fill=\"#444\">{}</text>\n",
        centre[c], box.y + 4,
        xml_escape(shortened(columns[c], static_cast<std::size_t>(col_w[c] / 6.1))));
  }
  double ly = box.y + kRowHeight + 2;
  for (std::size_t r = 0; r < rows.size() && ly <= box.bottom; ++r, ly += kRowHeight) {
    svg += fmt::format(
        "<text class=\"legend-row\" x=\"{}\" y=\"{:.1f}\" fill=\"{}\" "
        "font-weight=\"bold\">{}</text>\n",
        box.x, ly + 4, series_color(series[row_first[r]], row_first[r]),
        xml_escape(shortened(rows[r], static_cast<std::size_t>((label_w - 4) / kCharWidth))));
    for (std::size_t i = 0; i < series.size(); ++i) {
      const auto& s = series[i];
      if (s.legend_row != rows[r] || s.name.empty() || s.points.empty()) continue;
      const auto c = static_cast<std::size_t>(
          std::find(columns.begin(), columns.end(), s.legend_column) - columns.begin());
      svg += legend_sample(s, series_color(s, i), centre[c], ly, std::min(24.0, col_w[c] - 8));
      svg += "\n";
    }
  }
  return svg;
}

std::string legend_svg(const std::vector<Series>& series, const LegendBox& box) {
  const bool grid = std::all_of(series.begin(), series.end(), [](const Series& s) {
    return s.name.empty() || s.points.empty() ||
           (!s.legend_row.empty() && !s.legend_column.empty());
  });
  return grid ? legend_grid(series, box) : legend_list(series, box);
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string si_label(double v) {
  static constexpr struct {
    double scale;
    const char* prefix;
  } kPrefixes[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"},  {1e6, "M"}, {1e3, "k"},
                   {1, ""},     {1e-3, "m"}, {1e-6, "µ"}, {1e-9, "n"}};
  if (v == 0) return "0";
  for (const auto& p : kPrefixes) {
    if (std::fabs(v) >= p.scale * 0.9999) return fmt::format("{:g}{}", v / p.scale, p.prefix);
  }
  return fmt::format("{:g}", v);
}

std::string bytes_label(double v) {
  static constexpr struct {
    double scale;
    const char* unit;
  } kUnits[] = {{1024.0 * 1024 * 1024 * 1024, "TiB"},
                {1024.0 * 1024 * 1024, "GiB"},
                {1024.0 * 1024, "MiB"},
                {1024.0, "KiB"}};
  for (const auto& u : kUnits) {
    if (std::fabs(v) >= u.scale * 0.9999) return fmt::format("{:g} {}", v / u.scale, u.unit);
  }
  return fmt::format("{:g} B", v);
}

std::string percent_label(double v) { return fmt::format("{:g}%", std::round(v * 1000) / 10); }

std::vector<double> axis_ticks(Scale scale, double lo, double hi) {
  std::vector<double> ticks;
  if (!(hi > lo)) return ticks;
  if (scale == Scale::log10) {
    const int a = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
    const int b = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
    const int step = std::max(1, (b - a + 9) / 10);  // at most ~10 labels
    // A range of two decades or less also gets 2x and 5x labels, so that it has more than two.
    const bool fine = std::log10(hi / lo) <= 2.0 + 1e-9;
    for (int e = fine ? a - 1 : a; e <= b; e += step) {
      const double decade = std::pow(10.0, e);
      for (double m : {1.0, 2.0, 5.0}) {
        if (m != 1.0 && !fine) continue;
        const double v = m * decade;
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back(v);
      }
    }
  } else if (scale == Scale::log2) {
    const int a = static_cast<int>(std::ceil(std::log2(lo) - 1e-9));
    const int b = static_cast<int>(std::floor(std::log2(hi) + 1e-9));
    int step = 1;
    while ((b - a) / step > 10) step *= 2;
    for (int e = a; e <= b; e += step) ticks.push_back(std::pow(2.0, e));
  } else {
    const double raw = (hi - lo) / 6;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
      if (m * mag >= raw) {
        step = m * mag;
        break;
      }
    }
    for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) {
      ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
    }
  }
  return ticks;
}

std::string render_svg(const Chart& chart) {
  const double left = 84, right = 290, top = 40, bottom = 58;
  const double pw = chart.width - left - right, ph = chart.height - top - bottom;

  // Data range over the points that the scale can show.
  Range xr, yr;
  std::vector<Series> series = chart.series;
  for (auto& s : series) {
    std::erase_if(s.points, [&](const auto& p) {
      return !std::isfinite(p.first) || !std::isfinite(p.second) ||
             (is_log(chart.x.scale) && p.first <= 0) || (is_log(chart.y.scale) && p.second <= 0);
    });
    if (s.line) std::sort(s.points.begin(), s.points.end());
    for (const auto& [x, y] : s.points) {
      xr.add(x);
      yr.add(y);
    }
  }
  const auto [x0, x1] = nice_range(chart.x.scale, xr, chart.x);
  const auto [y0, y1] = nice_range(chart.y.scale, yr, chart.y);
  const double tx0 = transform(chart.x.scale, x0), tx1 = transform(chart.x.scale, x1);
  const double ty0 = transform(chart.y.scale, y0), ty1 = transform(chart.y.scale, y1);
  auto px = [&](double x) { return left + (transform(chart.x.scale, x) - tx0) / (tx1 - tx0) * pw; };
  auto py = [&](double y) {
    return top + ph - (transform(chart.y.scale, y) - ty0) / (ty1 - ty0) * ph;
  };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      chart.width, chart.height);
  // One id per chart so several charts can share a page.
  const auto clip_id = fmt::format(
      "clip{:x}", std::hash<std::string>{}(chart.title + std::to_string(chart.series.size())));
  svg += fmt::format(
      "<defs><clipPath id=\"{}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" "
      "height=\"{}\"/></clipPath></defs>\n",
      clip_id, left, top, pw, ph);
  svg += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
                     chart.width, chart.height);
  svg += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
                     left, xml_escape(chart.title));

  // Minor grid on log axes: 2..9 x each power of ten (log10) between the labelled ticks.
  auto minor_ticks = [](Scale s, double lo, double hi) {
    std::vector<double> out;
    if (s != Scale::log10) return out;
    for (int e = static_cast<int>(std::floor(std::log10(lo)));
         e <= static_cast<int>(std::ceil(std::log10(hi))); ++e) {
      for (int m = 2; m <= 9; ++m) {
        const double v = m * std::pow(10.0, e);
        if (v > lo && v < hi) out.push_back(v);
      }
    }
    return out;
  };
  for (double v : minor_ticks(chart.x.scale, x0, x1)) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#f0f0f0\"/>\n", px(v),
        top, top + ph);
  }
  for (double v : minor_ticks(chart.y.scale, y0, y1)) {
    svg += fmt::format(
        "<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\" stroke=\"#f0f0f0\"/>\n", py(v),
        left, left + pw);
  }
  for (double v : axis_ticks(chart.x.scale, x0, x1)) {
    const double x = px(v);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#d8d8d8\"/>\n", x, top,
        top + ph);
    svg +=
        fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#333\"/>\n",
                    x, top + ph, top + ph + 5);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x,
                       top + ph + 18, xml_escape(format_tick(chart.x, v)));
  }
  for (double v : axis_ticks(chart.y.scale, y0, y1)) {
    const double y = py(v);
    svg += fmt::format(
        "<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\" stroke=\"#d8d8d8\"/>\n", y, left,
        left + pw);
    svg +=
        fmt::format("<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\" stroke=\"#333\"/>\n",
                    y, left - 5, left);
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 8,
                       y + 4, xml_escape(format_tick(chart.y, v)));
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", left,
      top, pw, ph);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     left + pw / 2, chart.height - 12, xml_escape(chart.x.title));
  svg += fmt::format(
      "<text transform=\"translate(18,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      top + ph / 2, xml_escape(chart.y.title));

  svg += fmt::format("<g clip-path=\"url(#{})\">\n", clip_id);
  for (std::size_t i = 0; i < series.size(); ++i) {
    const auto& s = series[i];
    const char* color = series_color(s, i);
    if (s.line && s.points.size() >= 2) {
      std::string d;
      for (const auto& [x, y] : s.points)
        d += fmt::format("{}{:.1f},{:.1f}", d.empty() ? "M" : " L", px(x), py(y));
      svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", d,
                         color, s.dashed ? " stroke-dasharray=\"6,4\"" : "");
    }
    for (const auto& [x, y] : s.points) svg += marker_svg(s.marker, px(x), py(y), color);
    svg += "\n";
  }
  svg += "</g>\n";

  svg += legend_svg(
      series, {left + pw + 14, top + 6, chart.width - (left + pw + 14) - 6, chart.height - 10.0});
  svg += "</svg>\n";
  return svg;
}

}  // namespace truepeak::report
