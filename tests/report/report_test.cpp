#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "report/html_report.hpp"
#include "report/summary.hpp"
#include "report/svg_chart.hpp"
#include "report_test_util.hpp"

namespace truepeak::report {
namespace {

using test::cpu_fixture;
using test::gpu_fixture;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(SvgChart, Ticks) {
  EXPECT_EQ(axis_ticks(Scale::log10, 1, 1000), (std::vector<double>{1, 10, 100, 1000}));
  EXPECT_EQ(axis_ticks(Scale::log10, 2, 9000), (std::vector<double>{10, 100, 1000}));
  EXPECT_EQ(axis_ticks(Scale::log10, 10, 1000),
            (std::vector<double>{10, 20, 50, 100, 200, 500, 1000}));
  const auto wide = axis_ticks(Scale::log10, 1e-3, 1e30);  // at most ~10 labels
  EXPECT_LE(wide.size(), 12u);
  const auto bytes = axis_ticks(Scale::log2, 16 * 1024, 1 << 30);
  EXPECT_EQ(bytes.front(), 16 * 1024);
  EXPECT_LE(bytes.size(), 11u);
  for (std::size_t i = 1; i < bytes.size(); ++i) EXPECT_EQ(bytes[i], bytes[i - 1] * 4);
  const auto lin = axis_ticks(Scale::linear, 0, 1);
  ASSERT_EQ(lin.size(), 6u);
  EXPECT_DOUBLE_EQ(lin[1], 0.2);
  EXPECT_EQ(si_label(2.5e12), "2.5T");
  EXPECT_EQ(bytes_label(64 * 1024), "64 KiB");
  EXPECT_EQ(percent_label(0.45), "45%");
}

TEST(SvgChart, DrawsSeriesLegendAndEscapesText) {
  Chart c;
  c.title = "a <title> & more";
  c.x = {"x", Scale::log10, {}, {}, {}};
  c.y = {"y", Scale::linear, {}, {}, {}};
  c.series.push_back({"line <1>", {{1, 1}, {10, 2}, {100, 3}}, true, false, Marker::circle, -1});
  c.series.push_back({"dashed", {{1, 2}, {100, 2}}, true, true, Marker::none, -1});
  c.series.push_back(
      {"dropped", {{-1, 2}, {0, 2}}, false, false, Marker::square, -1});  // not on a log axis
  const auto svg = render_svg(c);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("a &lt;title&gt; &amp; more"), std::string::npos);
  EXPECT_NE(svg.find("line &lt;1&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<title>"), std::string::npos);
  EXPECT_EQ(count(svg, "<circle"), 3u + 1u);      // three points and the legend sample
  EXPECT_EQ(count(svg, "stroke-dasharray"), 2u);  // the dashed series and its legend sample
  EXPECT_EQ(count(svg, "<rect x=\""),
            3u);  // clip, background, frame: no square for the dropped points
  EXPECT_EQ(svg.find("nan"), std::string::npos);
}

TEST(ReportCharts, RooflinePlacesPointsByIntensity) {
  const auto p = gpu_fixture();
  const auto views = all_devices({p});
  // all_devices keeps pointers into the vector it was given: use a stable one.
  const std::vector<Profile> profiles = {p};
  const auto v = all_devices(profiles);
  const auto chart = roofline_chart(v[1]);
  const auto& gpu = *v[1].device;
  const Series* measured = nullptr;
  const Series* datasheet = nullptr;
  const Series* points = nullptr;
  for (const auto& s : chart.series) {
    if (s.name == "bf16 measured ceiling") measured = &s;
    if (s.name == "bf16 datasheet ceiling") datasheet = &s;
    if (s.name == "bf16 GEMM") points = &s;
  }
  ASSERT_TRUE(measured && datasheet && points);
  EXPECT_TRUE(datasheet->dashed);
  EXPECT_FALSE(measured->dashed);
  // The ridge sits at peak / bandwidth, at the peak.
  const double peak = gpu.peaks.flops_per_s.at("bf16");
  const double ridge = peak / *gpu.peaks.memory_Bps;
  bool found_ridge = false;
  for (const auto& [x, y] : measured->points) {
    if (std::abs(x - ridge) < 1e-9 * ridge) {
      EXPECT_DOUBLE_EQ(y, peak);
      found_ridge = true;
    }
    EXPECT_LE(y, peak * (1 + 1e-12));
  }
  EXPECT_TRUE(found_ridge);
  std::size_t bf16_points = 0;
  for (const auto& g : gpu.gemm) bf16_points += g.shape.dtype == DType::bf16;
  ASSERT_EQ(points->points.size(), bf16_points);
  const auto& first = gpu.gemm.front();
  EXPECT_DOUBLE_EQ(points->points[0].first, first.shape.flops() / first.shape.bytes());
  EXPECT_DOUBLE_EQ(points->points[0].second, first.flops_per_s);
}

TEST(SvgChart, GridLegendNamesEachRowAndColumnOnce) {
  Chart c;
  c.x = {"x", Scale::log10, {}, {}, {}};
  c.y = {"y", Scale::log10, {}, {}, {}};
  const std::string long_row(60, 'r');  // cut to fit the legend's width
  c.series.push_back({"a line", {{1, 1}, {10, 10}}, true, false, Marker::none, 0, "a", "line"});
  c.series.push_back({"a dots", {{2, 3}}, false, false, Marker::circle, 0, "a", "dots"});
  c.series.push_back({"b dots", {{3, 2}}, false, false, Marker::square, 1, long_row, "dots"});
  c.series.push_back({"b empty", {}, true, true, Marker::none, 1, long_row, "never drawn"});
  const auto svg = render_svg(c);
  EXPECT_EQ(count(svg, "class=\"legend-row\""), 2u);
  EXPECT_EQ(count(svg, "class=\"legend-column\""), 2u);
  EXPECT_EQ(count(svg, "class=\"legend-entry\""), 0u);
  EXPECT_EQ(svg.find(long_row), std::string::npos);
  EXPECT_NE(svg.find("rrrr…rrrr"), std::string::npos);
  EXPECT_EQ(svg.find("never drawn"), std::string::npos);
  // Every legend text starts inside the chart.
  const std::regex text_x(R"re(<text class="legend-[a-z]+" x="([0-9.]+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text_x); it != std::sregex_iterator();
       ++it)
    EXPECT_LT(std::stod((*it)[1]), c.width - 20);
  // A series without a place in the grid turns the legend back into a list.
  c.series.push_back({"plain", {{5, 5}}, false, false, Marker::circle});
  EXPECT_EQ(count(render_svg(c), "class=\"legend-entry\""), 4u);
}

TEST(ReportCharts, RooflineLegendIsOneRowPerDtype) {
  const std::vector<Profile> profiles = {
      test::committed_profile("nvidia-h200/nvidia-h200-default.json")};
  const auto v = all_devices(profiles);
  const auto chart = roofline_chart(v.at(0));
  const auto dtypes = gemm_dtypes(*v[0].device);
  ASSERT_GE(dtypes.size(), 6u);
  ASSERT_GT(chart.series.size(), 3 * dtypes.size());
  std::map<std::string, int> color_of;
  const std::vector<std::string> kinds = {"measured", "datasheet", "GEMM", "conv"};
  for (const auto& s : chart.series) {
    EXPECT_NE(std::find(dtypes.begin(), dtypes.end(), s.legend_row), dtypes.end()) << s.name;
    EXPECT_EQ(s.name.rfind(s.legend_row + " ", 0), 0u) << s.name;
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), s.legend_column), kinds.end()) << s.name;
    const auto [at, first] = color_of.emplace(s.legend_row, s.color);
    EXPECT_EQ(at->second, s.color) << s.name << ": one colour for every series of a dtype";
  }
  std::set<int> colors;
  for (const auto& [dt, color] : color_of) colors.insert(color);
  EXPECT_EQ(colors.size(), dtypes.size()) << "a colour of its own for each dtype";
  const auto svg = render_svg(chart);
  EXPECT_EQ(count(svg, "class=\"legend-row\""), dtypes.size());
  EXPECT_EQ(count(svg, "class=\"legend-column\""), kinds.size());
  EXPECT_EQ(count(svg, "class=\"legend-entry\""), 0u);
}

TEST(ReportCharts, CpuRooflineDrawsTheDerivedDatasheetPeaks) {
  for (const auto* name : {"zen3-epyc/dev-cpu.json", "xeon-amx/dev-cpu.json"}) {
    const std::vector<Profile> profiles = {test::committed_profile(name)};
    const auto v = all_devices(profiles);
    const auto& cpu = *v.at(0).device;
    // Derived from clock and instruction width: compute peaks, no memory bandwidth.
    ASSERT_FALSE(cpu.datasheet.memory_Bps) << name;
    ASSERT_FALSE(cpu.datasheet.flops_per_s.empty()) << name;
    const auto chart = roofline_chart(v[0]);
    double lo = 1e300, hi = 0;
    for (const auto& s : chart.series) {
      for (const auto& [x, y] : s.points) {
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
    }
    for (const auto& [dt, peak] : cpu.datasheet.flops_per_s) {
      const auto it = std::find_if(chart.series.begin(), chart.series.end(), [&](const Series& s) {
        return s.name == dt + " datasheet ceiling";
      });
      ASSERT_NE(it, chart.series.end()) << name << " " << dt;
      EXPECT_TRUE(it->dashed && it->line);
      EXPECT_EQ(it->legend_column, "datasheet");
      ASSERT_EQ(it->points.size(), 2u);
      EXPECT_DOUBLE_EQ(it->points.front().first, lo);  // across the whole chart
      EXPECT_DOUBLE_EQ(it->points.back().first, hi);
      for (const auto& [x, y] : it->points) EXPECT_DOUBLE_EQ(y, peak);
    }
  }
}

TEST(ReportCharts, EfficiencySortsSquaresAndLeavesOutColdWeights) {
  // A square point out of order and a cold-weight repeat added to the CPU fixture.
  Profile p = cpu_fixture();
  auto& gemm = p.devices.at(0).gemm;
  const GemmShape small{DType::f32, 32, 32, 32, 1}, skinny{DType::f32, 1, 4096, 4096, 1};
  gemm.push_back({small, {1e-6, 1e-6, 0.01, 10}, small.flops() / 1e-6, "x", "row-major"});
  gemm.push_back({skinny, {1e-3, 1e-3, 0.01, 10}, skinny.flops() / 1e-3, "x", "row-major", true});
  const std::vector<Profile> profiles = {p};
  const auto eff = gemm_efficiency_chart(all_devices(profiles));
  const Series* square = nullptr;
  const Series* other = nullptr;
  for (const auto& s : eff.series) {
    if (s.name == "f32 square") square = &s;  // one device: no machine prefix
    if (s.name == "f32 other shapes") other = &s;
  }
  ASSERT_NE(square, nullptr);
  EXPECT_TRUE(square->line);
  EXPECT_TRUE(std::is_sorted(square->points.begin(), square->points.end()));
  EXPECT_DOUBLE_EQ(square->points.front().first, small.flops());
  std::size_t warm_other = 0;
  for (const auto& g : gemm)
    warm_other += g.shape.dtype == DType::f32 && !g.cold_weights &&
                  !(g.shape.m == g.shape.n && g.shape.n == g.shape.k && g.shape.batch == 1);
  ASSERT_GT(warm_other, 0u);
  ASSERT_NE(other, nullptr);
  EXPECT_FALSE(other->line);
  EXPECT_EQ(other->points.size(), warm_other);  // the cold repeat is not among them
}

TEST(ReportCharts, EfficiencyBandwidthTransfers) {
  const std::vector<Profile> profiles = {cpu_fixture(), gpu_fixture()};
  const auto views = all_devices(profiles);
  const auto eff = gemm_efficiency_chart(views);
  ASSERT_FALSE(eff.series.empty());
  // Square problems of f32 first, as a line in order of size, starting at the smallest.
  const auto& square = eff.series.front();
  EXPECT_EQ(square.name, "fixture-cpu-box/cpu f32 square");
  EXPECT_TRUE(square.line);
  EXPECT_TRUE(std::is_sorted(square.points.begin(), square.points.end()));
  const GemmPoint* smallest = nullptr;
  for (const auto& g : profiles[0].devices[0].gemm)
    if (g.shape.dtype == DType::f32 && g.shape.m == g.shape.n && g.shape.n == g.shape.k &&
        g.shape.batch == 1 && (!smallest || g.shape.flops() < smallest->shape.flops()))
      smallest = &g;
  ASSERT_NE(smallest, nullptr);
  EXPECT_DOUBLE_EQ(square.points.front().second, smallest->flops_per_s / 1.2e12);
  const auto bw = bandwidth_chart(views);
  bool has_datasheet = false;
  for (const auto& s : bw.series)
    has_datasheet = has_datasheet || s.name == "fixture-gpu-box/cuda:0 datasheet HBM";
  EXPECT_TRUE(has_datasheet);
  const auto tr = transfer_chart(views);
  ASSERT_TRUE(tr);
  EXPECT_EQ(tr->series.size(), 8u);  // four directions, points and fit each
  const std::vector<Profile> cpu_only = {cpu_fixture()};
  EXPECT_FALSE(transfer_chart(all_devices(cpu_only)));
}

TEST(Report, HtmlIsSelfContained) {
  const std::vector<Profile> profiles = {cpu_fixture(), gpu_fixture()};
  const auto html = render_report_html(profiles, {"a.json", "b.json"});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // Three rooflines, GEMM efficiency, bandwidth, transfers.
  EXPECT_EQ(count(html, "<svg"), 6u);
  EXPECT_EQ(count(html, "</svg>"), 6u);
  // Nothing is fetched: no URL other than the SVG namespace name.
  const std::string without_ns =
      std::regex_replace(html, std::regex("xmlns=\"http://www.w3.org/2000/svg\""), "");
  EXPECT_EQ(without_ns.find("http:"), std::string::npos);
  EXPECT_EQ(without_ns.find("https:"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_NE(html.find("fixture-gpu-box/cuda:0"), std::string::npos);
  EXPECT_NE(html.find("of datasheet"), std::string::npos);
  EXPECT_NE(html.find("gemm fp8 — fixture: not measured"), std::string::npos);
}

TEST(Report, TablesHoldNoRawJson) {
  // The committed profiles carry nested conditions (lists of records, objects in objects).
  for (const auto* name : {"nvidia-h200/nvidia-h200-default.json", "zen3-epyc/dev-cpu.json",
                           "xeon-amx/dev-cpu.json"}) {
    const auto html = render_report_html({test::committed_profile(name)}, {name});
    for (const auto* json : {"{\"", "{&quot;", "&quot;:", "[{"})
      EXPECT_EQ(html.find(json), std::string::npos) << name << ": " << json;
  }
  const auto html = render_report_html({test::committed_profile("xeon-amx/dev-cpu.json")}, {});
  EXPECT_NE(html.find("<tr><td>closing watch</td><td>18.5 s</td></tr>"), std::string::npos);
  EXPECT_NE(html.find("<table class=\"records\">"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>onednn</td><td>2.6.3</td></tr>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>sentinel › probes</td><td>769</td></tr>"), std::string::npos);
}

TEST(Report, NothingIsWiderThanThePage) {
  const std::vector<Profile> profiles = {
      test::committed_profile("xeon-amx/dev-cpu.json"),
      test::committed_profile("nvidia-h200/nvidia-h200-default.json")};
  const auto html = render_report_html(profiles, {"cpu.json", "gpu.json"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, std::regex(R"(body\{[^}]*max-width:(\d+)px)")));
  const int page = std::stoi(m[1]);
  EXPECT_LE(page, 1280);
  // Fixed sizes: SVG attributes and CSS lengths.
  const std::regex fixed(R"((?:width=\"|width:)(\d+(?:\.\d+)?))");
  std::size_t sizes = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), fixed);
       it != std::sregex_iterator(); ++it, ++sizes)
    EXPECT_LE(std::stod((*it)[1]), page) << (*it)[0];
  EXPECT_GT(sizes, 6u);
  // What a window narrower than that shrinks: charts and tables.
  EXPECT_NE(html.find("svg{display:block;max-width:100%;height:auto}"), std::string::npos);
  EXPECT_NE(html.find("table{max-width:100%}"), std::string::npos);
  EXPECT_NE(html.find("overflow-wrap:anywhere"), std::string::npos);
}

std::string run(const std::string& command) {
  std::string out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[512];
    while (fgets(buffer, sizeof buffer, pipe)) out += buffer;
    pclose(pipe);
  }
  return out;
}

struct Screenshot {
  int width = 0, height = 0, colours = 0;
  double non_white = 0;        // fraction of the page's pixels
  double non_white_right = 0;  // fraction of those at x >= right_of
};

// The page as headless Chromium draws it in a window of width x height, measured by
// png_stats.py; nullopt, with the test failed, when Chromium or the measure did not run.
std::optional<Screenshot> screenshot(const std::string& html, int width, int height, int right_of) {
  namespace fs = std::filesystem;
  const auto dir =
      fs::temp_directory_path() / fs::path("truepeak_report_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto html_path = dir / "report.html";
  const auto png_path = dir / "shot.png";
  write_file_atomic(html_path.string(), html);
  // --no-sandbox: test runners often run as root, where Chromium's sandbox refuses to start.
  const auto cmd = fmt::format(
      "chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size={},{} "
      "--screenshot={} file://{} >/dev/null 2>&1",
      width, height, png_path.string(), html_path.string());
  std::optional<Screenshot> shot;
  if (std::system(cmd.c_str()) != 0 || !fs::exists(png_path)) {
    ADD_FAILURE() << cmd;
  } else {
    const auto stats = run(fmt::format("/usr/bin/python3 {}/tests/report/png_stats.py {} {}",
                                       TRUEPEAK_SOURCE_DIR, png_path.string(), right_of));
    std::istringstream in(stats);
    Screenshot s;
    if (in >> s.width >> s.height >> s.colours >> s.non_white >> s.non_white_right) {
      shot = s;
    } else {
      ADD_FAILURE() << "png_stats.py: " << stats;
    }
  }
  fs::remove_all(dir);
  return shot;
}

// Renders the report in headless Chromium and checks the screenshot shows tables and plots.
TEST(Report, ChromiumScreenshotIsNotBlank) {
  if (run("command -v chromium").empty())
    GTEST_SKIP() << "chromium is not installed (Debian package: chromium)";
  const std::vector<Profile> profiles = {cpu_fixture(), gpu_fixture()};
  const auto shot =
      screenshot(render_report_html(profiles, {"cpu.json", "gpu.json"}), 1280, 2400, 1279);
  ASSERT_TRUE(shot);
  EXPECT_EQ(shot->width, 1280);
  EXPECT_EQ(shot->height, 2400);
  EXPECT_GT(shot->colours, 50) << "a page of text and coloured plots has many distinct colours";
  EXPECT_GT(shot->non_white, 0.02);
}

// The CPU profile's conditions are the longest table; drawn in a window wider than the page,
// nothing reaches past the page's right edge (its 1280 px and the body's 24 px margin).
TEST(Report, ChromiumDrawsNothingRightOfThePage) {
  if (run("command -v chromium").empty())
    GTEST_SKIP() << "chromium is not installed (Debian package: chromium)";
  const auto html = render_report_html({test::committed_profile("xeon-amx/dev-cpu.json")}, {});
  const auto shot = screenshot(html, 1400, 6000, 24 + 1280 + 4);
  ASSERT_TRUE(shot);
  EXPECT_GT(shot->non_white, 0.02);
  EXPECT_EQ(shot->non_white_right, 0.0);
}


TEST(RuntimeSummary, DispatchNamesEachConditionThatExcludesACall) {
  RuntimeRecord r;
  RuntimeConvDispatch d;
  d.impl = "native";
  d.max_batch = 1;
  d.max_window = 3;
  r.conv_dispatch = d;
  ConvPoint native;
  native.impl = "native";
  ConvPoint library;
  library.impl = "library";
  r.conv = {native, library, library};
  EXPECT_EQ(runtime_dispatch_summary(r),
            "convolutions in native when <= 1 image, window <= 3 (larger side), unstrided, dense; 1 of "
            "the 3 conv points there");
  r.conv_dispatch->max_input_elements = 20480;
  r.conv_dispatch->strided = r.conv_dispatch->depthwise = r.conv_dispatch->window_smaller_side = true;
  EXPECT_EQ(runtime_dispatch_summary(r),
            "convolutions in native when <= 20480 input elements, <= 1 image, window <= 3 (smaller side), "
            "dense or depthwise; 1 of the 3 conv points there");
  r.conv_dispatch->grouped = true;
  r.conv_dispatch->depthwise = false;
  EXPECT_EQ(runtime_dispatch_summary(r),
            "convolutions in native when <= 20480 input elements, <= 1 image, window <= 3 (smaller side), "
            "not depthwise; 1 of the 3 conv points there");
  r.conv_dispatch->depthwise = true;
  EXPECT_EQ(runtime_dispatch_summary(r),
            "convolutions in native when <= 20480 input elements, <= 1 image, window <= 3 (smaller side); 1 "
            "of the 3 conv points there");
  // The paths' fixed costs, where measured (an unmeasured one as "?").
  r.conv_dispatch->op_s = 1.06e-5;
  r.conv_dispatch->others_op_s = 8.34e-5;
  EXPECT_EQ(runtime_dispatch_summary(r),
            "convolutions in native when <= 20480 input elements, <= 1 image, window <= 3 (smaller side); 1 "
            "of the 3 conv points there; a call takes at least 10.6 us there, 83.4 us elsewhere");
  r.conv_dispatch->op_s.reset();
  EXPECT_NE(runtime_dispatch_summary(r).find("at least ? there, 83.4 us elsewhere"), std::string::npos);
}

TEST(RuntimeSummary, HostSpeedComesFromTheHostProbesMoments) {
  RuntimeRecord r;
  EXPECT_EQ(runtime_host_summary(r), "");  // no moments
  r.probes = nlohmann::json::array({{{"name", "host matmul f32"}, {"shape", "128x128x128"}, {"time_s", 2e-4}},
                                    {{"name", "conv x"}, {"time_s", 9e-4}}});
  EXPECT_EQ(runtime_host_summary(r), "");  // one moment says nothing of a spread
  r.probes.push_back({{"name", "host matmul f32"}, {"shape", "128x128x128"}, {"time_s", 3e-4}});
  r.probes.push_back({{"name", "host matmul f32"}, {"shape", "128x128x128"}, {"time_s", 2.5e-4}});
  r.probes.push_back({{"name", "host matmul f32"}, {"time_s", "fast"}});  // not a time: left out
  EXPECT_EQ(runtime_host_summary(r),
            "host speed: matmul f32 128x128x128 at 3 moments, the slowest 1.50x the fastest, the median 1.25x");
  auto even = r;  // an even number of moments: the median is the mean of the middle two
  even.probes.push_back({{"name", "host matmul f32"}, {"time_s", 2.7e-4}});
  EXPECT_EQ(runtime_host_summary(even),
            "host speed: matmul f32 128x128x128 at 4 moments, the slowest 1.50x the fastest, the median 1.30x");
  Profile p = cpu_fixture();
  r.framework = "torch 2.15.0";
  r.threads = 2;
  r.dtypes = {DType::f32};
  p.devices.at(0).runtimes["torch-eager"] = r;
  EXPECT_NE(runtimes_summary(p).find("\n    host speed: matmul f32 128x128x128 at 3 moments"), std::string::npos)
      << runtimes_summary(p);
}

TEST(RuntimeSummary, ColdCallsAreListedWhereMeasured) {
  Profile p = cpu_fixture();
  RuntimeRecord r;
  r.framework = "torch 2.15.0";
  r.threads = 2;
  r.dtypes = {DType::f32};
  r.op_s = 5e-6;
  r.kind_op_s = {{"conv2d", DType::f32, 9.7e-6, 4.7e-5}, {"reshape", std::nullopt, 6e-7, std::nullopt}};
  p.devices.at(0).runtimes["torch-eager"] = r;
  EXPECT_EQ(runtimes_summary(p).find("cold calls"), std::string::npos);  // none measured
  p.devices.at(0).runtimes["torch-eager"].cold_op_s = 2.4e-5;
  EXPECT_NE(runtimes_summary(p).find("    cold calls (a pass that outgrows the caches): op 24 us, conv2d 47 us\n"),
            std::string::npos)
      << runtimes_summary(p);
}

}  // namespace
}  // namespace truepeak::report
