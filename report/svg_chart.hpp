// A small SVG line/scatter chart with log or linear axes, ticks, grid and a legend: enough for
// the report's plots without a plotting library or network access (the HTML stays one file).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace truepeak::report {

enum class Scale { linear, log10, log2 };

struct Axis {
  std::string title;
  Scale scale = Scale::log10;
  std::function<std::string(double)> format;  // tick labels; empty: "%g"
  std::optional<double> min, max;             // forced range; otherwise from the data
};

enum class Marker { none, circle, square, triangle };

struct Series {
  std::string name;
  std::vector<std::pair<double, double>>
      points;  // (x, y); non-positive values are dropped on log axes
  bool line = true;
  bool dashed = false;
  Marker marker = Marker::circle;
  int color = -1;  // palette index; -1: the series' position
  // Where the series sits in a grid legend (a row per group, e.g. a dtype, a column per kind,
  // e.g. "measured"). When every named series has both, the legend is that grid; otherwise a
  // list of names. Defaulted, so that brace-initialised series may leave them out.
  std::string legend_row = {};
  std::string legend_column = {};
};

struct Chart {
  std::string title;
  Axis x, y;
  std::vector<Series> series;
  int width = 880;
  int height = 460;
};

// The chart as an <svg> element (no XML prolog), ready to inline in HTML.
std::string render_svg(const Chart& chart);

// Tick positions for an axis range (exposed for tests): decades (log10), powers of 2 or 4
// (log2), or 1/2/5 x 10^k steps (linear).
std::vector<double> axis_ticks(Scale scale, double lo, double hi);

// Escapes &, <, >, " and ' for XML text and attributes.
std::string xml_escape(const std::string& text);

// Tick label formatters: "1T", "250G" (decimal SI); "64 KiB" (binary); "45%".
std::string si_label(double v);
std::string bytes_label(double v);
std::string percent_label(double v);

}  // namespace truepeak::report
