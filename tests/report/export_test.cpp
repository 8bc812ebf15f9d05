// Each exporter against a checked-in example of its target's documented format:
// data/llm_analysis_gpu_config_example.json (llm-analysis llm_analysis/gpu_configs/*.json),
// data/prometheus_example.prom (Prometheus text exposition format 0.0.4); CSV against the profile.
// Calculon: export_calculon_test.cpp.
#include "report/export.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "report_test_util.hpp"

namespace truepeak::report {
namespace {

using nlohmann::json;
using test::cpu_fixture;
using test::data_path;
using test::gpu_fixture;
using test::joined;
using test::read_json;
using test::read_text;

TEST(Export, UnknownFormatAndDevice) {
  EXPECT_THROW(parse_export_format("excel"), InputError);
  EXPECT_EQ(parse_export_format("calculon"), ExportFormat::calculon);
  const auto p = gpu_fixture();
  EXPECT_THROW(export_profile(p, ExportFormat::csv, "cuda:7", "p.json"), InputError);
  try {
    export_profile(p, ExportFormat::llm_analysis, "tpu", "p.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cpu, cuda:0"), std::string::npos) << e.what();
  }
}

// ---- llm-analysis -------------------------------------------------------------------------

TEST(ExportLlmAnalysis, FieldsMatchTheTargetFormat) {
  const auto example = read_json(data_path("llm_analysis_gpu_config_example.json"));
  const auto p = gpu_fixture();
  const auto r = export_profile(p, ExportFormat::llm_analysis, "", "p.json");  // default: the GPU
  const auto out = json::parse(r.text);
  // The example's keys, in its order, each of its type: a key without a measured value is left
  // out (an explicit null would replace llm-analysis's default), never written as null.
  auto e = example.begin();
  for (auto o = out.begin(); o != out.end(); ++o) {
    while (e != example.end() && e.key() != o.key()) ++e;
    ASSERT_NE(e, example.end()) << o.key() << " is not one of the example's keys, in its order";
    EXPECT_EQ(o->is_string(), e->is_string()) << o.key();
    EXPECT_EQ(o->is_number(), e->is_number()) << o.key();
  }
  const auto& gpu = *p.find_device("cuda:0");
  EXPECT_EQ(out["name"], "fixture-gpu-box-cuda-0");
  // llm-analysis multiplies mem_per_GPU_in_GB by 1024^3.
  EXPECT_DOUBLE_EQ(out["mem_per_GPU_in_GB"].get<double>() * (1LL << 30), 80e9);
  EXPECT_DOUBLE_EQ(out["peak_fp16_TFLOPS"].get<double>(),
                   gpu.datasheet.flops_per_s.at("f16") / 1e12);
  EXPECT_DOUBLE_EQ(out["peak_i8_TFLOPS"].get<double>(),
                   gpu.datasheet.flops_per_s.at("int8") / 1e12);
  EXPECT_DOUBLE_EQ(out["hbm_bandwidth_in_GB_per_sec"].get<double>(),
                   *gpu.datasheet.memory_Bps / 1e9);
  // The interconnect as measured: the host link.
  const auto link = *measured_host_link(gpu);
  EXPECT_DOUBLE_EQ(out["intra_node_bandwidth_in_GB_per_sec"].get<double>(), link.Bps / 1e9);
  EXPECT_DOUBLE_EQ(out["intra_node_min_message_latency"].get<double>(), link.latency_s);
  // Not measured: left out, so llm-analysis's defaults hold.
  EXPECT_FALSE(out.contains("inter_node_bandwidth_in_GB_per_sec"));
  EXPECT_FALSE(out.contains("peak_i4_TFLOPS"));
  // The measured efficiencies printed beside it, one per GEMM dtype, over the peak it scales.
  const auto notes = joined(r.notes);
  for (const auto& [dtype, peak] : {std::pair{"f16", "f16"}, {"bf16", "f16"}, {"int8", "int8"}}) {
    const double eff = gpu.peaks.flops_per_s.at(dtype) / gpu.datasheet.flops_per_s.at(peak);
    EXPECT_NE(notes.find(fmt::format("{:<5} --flops_efficiency {:.3f}", dtype, eff)),
              std::string::npos)
        << dtype << "\n"
        << notes;
  }
  const double mem_eff = *gpu.peaks.memory_Bps / *gpu.datasheet.memory_Bps;
  EXPECT_NE(notes.find(fmt::format("--hbm_memory_efficiency {:.3f}", mem_eff)), std::string::npos)
      << notes;
  // What the format cannot carry, with this device's figure.
  EXPECT_NE(
      notes.find(fmt::format("no per-op cost ({:.3g} us an op here)", *gpu.overhead_op_s * 1e6)),
      std::string::npos)
      << notes;
  EXPECT_NE(notes.find("truepeak estimate"), std::string::npos) << notes;
}

TEST(ExportLlmAnalysis, CpuWithoutF16UsesBf16AndLeavesOutWhatItDidNotMeasure) {
  const auto r = export_profile(cpu_fixture(), ExportFormat::llm_analysis, "cpu", "p.json");
  const auto out = json::parse(r.text);
  EXPECT_DOUBLE_EQ(out["peak_fp16_TFLOPS"].get<double>(), 4.8);
  for (const char* key :
       {"peak_i8_TFLOPS", "intra_node_bandwidth_in_GB_per_sec", "intra_node_min_message_latency"})
    EXPECT_FALSE(out.contains(key)) << key;
  for (const auto& [key, value] : out.items()) EXPECT_FALSE(value.is_null()) << key;
  const auto notes = joined(r.notes);
  EXPECT_NE(notes.find("bf16  --flops_efficiency"), std::string::npos) << notes;
  EXPECT_NE(notes.find("no 8-bit GEMM measured"), std::string::npos) << notes;
  EXPECT_NE(notes.find("llm-analysis requires it"), std::string::npos) << notes;
}

// ---- CSV ----------------------------------------------------------------------------------

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out{""};
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        out.back() += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.emplace_back();
    } else {
      out.back() += ch;
    }
  }
  return out;
}

// The header and each row as column -> cell.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
};

Csv read_csv(const std::string& text) {
  Csv csv;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  csv.header = split_csv_line(line);
  while (std::getline(in, line)) {
    const auto cells = split_csv_line(line);
    EXPECT_EQ(cells.size(), csv.header.size()) << line;
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < std::min(cells.size(), csv.header.size()); ++i)
      row[csv.header[i]] = cells[i];
    csv.rows.push_back(row);
  }
  return csv;
}

TEST(ExportCsv, OneRowPerMeasuredPoint) {
  const auto p = gpu_fixture();
  const auto csv = read_csv(export_profile(p, ExportFormat::csv, "", "p.json").text);
  EXPECT_EQ(csv.header.front(), "machine");
  std::size_t expected = 0;
  for (const auto& d : p.devices) {
    expected += d.gemm.size() + d.conv.size() + d.vector_ops.size() + d.memory_sweep.size();
    for (const auto& [name, fit] : d.transfers) expected += fit.points.size();
  }
  EXPECT_EQ(csv.rows.size(), expected);
  const auto& g = p.find_device("cuda:0")->gemm.front();
  bool checked_gemm = false;
  for (const auto& row : csv.rows) {
    if (row.at("what") != "gemm" || row.at("device") != "cuda:0" || row.at("index") != "0")
      continue;
    EXPECT_EQ(row.at("name"), g.shape.str());
    EXPECT_EQ(row.at("m"), std::to_string(g.shape.m));
    EXPECT_DOUBLE_EQ(std::stod(row.at("flops_per_s")), g.flops_per_s);
    EXPECT_DOUBLE_EQ(std::stod(row.at("time_s")), g.timing.time_s);
    EXPECT_EQ(row.at("impl"), g.impl);
    EXPECT_EQ(row.at("cold_weights"), "false");
    EXPECT_EQ(row.at("Bps"), "");
    checked_gemm = true;
  }
  EXPECT_TRUE(checked_gemm);
}

// On the committed CPU profiles: one row per key, every attribute in a column of its own.
TEST(ExportCsv, EveryAttributeInAColumnAndOneRowPerKey) {
  for (const char* name : {"zen3-epyc/dev-cpu.json", "zen4-epyc/dev-cpu.json",
                           "nvidia-h200/nvidia-h200-default.json"}) {
    const auto p = test::committed_profile(name);
    const auto csv = read_csv(export_profile(p, ExportFormat::csv, "", name).text);
    std::set<std::string> keys;
    std::size_t gemm = 0, conv = 0, cold = 0;
    for (const auto& row : csv.rows) {
      EXPECT_TRUE(
          keys.insert(row.at("device") + "/" + row.at("what") + "/" + row.at("index")).second)
          << name << ": " << row.at("name");
      EXPECT_EQ(row.at("name").find("cold"), std::string::npos) << row.at("name");
      if (row.at("what") == "gemm") {
        const auto& point = p.devices[0].gemm.at(std::stoul(row.at("index")));
        EXPECT_EQ(row.at("name"), point.shape.str());
        EXPECT_FALSE(row.at("layout").empty()) << name;
        EXPECT_EQ(row.at("layout").find("cold"), std::string::npos) << row.at("layout");
        EXPECT_EQ(row.at("cold_weights"), point.cold_weights ? "true" : "false");
        cold += point.cold_weights;
        ++gemm;
      } else if (row.at("what") == "conv") {
        const auto& point = p.devices[0].conv.at(std::stoul(row.at("index")));
        const auto& s = point.shape;
        EXPECT_EQ(row.at("name"), s.str());
        EXPECT_EQ(row.at("layout"), point.layout);
        EXPECT_EQ(row.at("cold_weights"), point.cold_weights ? "true" : "false");
        const std::vector<std::pair<const char*, std::int64_t>> dims = {
            {"batch", s.n},      {"ic", s.c},
            {"ih", s.h},         {"iw", s.w},
            {"oc", s.k},         {"kh", s.r},
            {"kw", s.s},         {"stride", s.stride},
            {"pad", s.pad},      {"dilation", s.dilation},
            {"groups", s.groups}};
        for (const auto& [column, value] : dims) EXPECT_EQ(row.at(column), std::to_string(value));
        EXPECT_EQ(row.at("m"), "");
        cold += point.cold_weights;
        ++conv;
      }
    }
    EXPECT_EQ(gemm, p.devices[0].gemm.size());
    EXPECT_EQ(conv, p.devices[0].conv.size());
    if (p.devices[0].kind == "cpu") {
      EXPECT_GT(cold, 0u) << name;
    }
  }
}

// The 3x3 layer of 64 channels at 56x56 is measured four times on a CPU: in the layout oneDNN
// picks and blocked (the grid), and plain NHWC and NCHW. Where oneDNN picks NHWC, two rows match
// in every attribute the profile records: `index` tells them apart.
TEST(ExportCsv, TheFourRowsOfOneConvolutionShape) {
  const auto p = test::committed_profile("zen4-epyc/dev-cpu.json");
  const auto csv = read_csv(export_profile(p, ExportFormat::csv, "", "p.json").text);
  const std::string shape = ConvShape{DType::f32, 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1}.str();
  std::multiset<std::string> layouts;
  std::set<std::string> indices;
  for (const auto& row : csv.rows) {
    if (row.at("what") != "conv" || row.at("name") != shape || row.at("cold_weights") != "false")
      continue;
    layouts.insert(row.at("layout"));
    indices.insert(row.at("index"));
  }
  EXPECT_EQ(layouts, (std::multiset<std::string>{"blocked", "nchw", "nhwc", "nhwc"}));
  EXPECT_EQ(indices.size(), 4u);
}

// ---- Prometheus ---------------------------------------------------------------------------

struct Exposition {
  std::map<std::string, std::string> type;  // family -> type
  std::map<std::string, std::string> help;
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> samples;
  std::vector<std::string> errors;
};

// A reader of the text format, strict where Prometheus is: metric and label names, quoting and
// escapes in label values, numeric values, each family's lines contiguous, TYPE before samples.
Exposition parse_exposition(const std::string& text) {
  static const std::regex name_re("[a-zA-Z_:][a-zA-Z0-9_:]*");
  static const std::regex label_name_re("[a-zA-Z_][a-zA-Z0-9_]*");
  Exposition e;
  std::istringstream in(text);
  std::string line, current;
  std::set<std::string> finished;
  std::set<std::string> series;
  auto enter = [&](const std::string& family) {
    if (family != current) {
      if (finished.count(family)) e.errors.push_back("family split: " + family);
      if (!current.empty()) finished.insert(current);
      current = family;
    }
  };
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line);
      std::string hash, kind, name, rest;
      words >> hash >> kind >> name;
      std::getline(words, rest);
      if (kind == "HELP" || kind == "TYPE") {
        if (!std::regex_match(name, name_re)) e.errors.push_back("bad name: " + line);
        enter(name);
        if (kind == "TYPE") {
          rest = rest.substr(rest.find_first_not_of(' '));
          static const std::set<std::string> types = {"counter", "gauge", "histogram", "summary",
                                                      "untyped"};
          if (!types.count(rest)) e.errors.push_back("bad type: " + line);
          if (e.type.count(name)) e.errors.push_back("second TYPE: " + line);
          e.type[name] = rest;
        } else {
          e.help[name] = rest;
        }
      }
      continue;
    }
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    const auto name = line.substr(0, i);
    if (!std::regex_match(name, name_re)) e.errors.push_back("bad metric name: " + line);
    enter(name);
    std::map<std::string, std::string> labels;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const auto eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
          e.errors.push_back("bad label: " + line);
          break;
        }
        const auto label = line.substr(i, eq - i);
        if (!std::regex_match(label, label_name_re)) e.errors.push_back("bad label name: " + line);
        std::string value;
        std::size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            ++j;
            if (j >= line.size() || (line[j] != '\\' && line[j] != '"' && line[j] != 'n')) {
              e.errors.push_back("bad escape: " + line);
            }
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        labels[label] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') {
      e.errors.push_back("no value: " + line);
      continue;
    }
    const auto value = line.substr(i + 1);
    if (value != "+Inf" && value != "-Inf" && value != "NaN") {
      std::size_t used = 0;
      try {
        std::stod(value, &used);
      } catch (const std::exception&) {
      }
      if (used == 0 || used != value.size()) e.errors.push_back("bad value: " + line);
    }
    std::string key = name;
    for (const auto& [k, v] : labels) key += "|" + k + "=" + v;
    if (!series.insert(key).second) e.errors.push_back("duplicate series: " + line);
    e.samples.push_back({name, labels});
  }
  return e;
}

TEST(ExportPrometheus, TheReaderAcceptsTheDocumentedExample) {
  const auto e = parse_exposition(read_text(data_path("prometheus_example.prom")));
  EXPECT_TRUE(e.errors.empty()) << e.errors.front();
  EXPECT_EQ(e.type.at("http_requests_total"), "counter");
  EXPECT_EQ(e.samples.size(), 7u);
  bool found = false;
  for (const auto& [name, labels] : e.samples) {
    if (name == "msdos_file_access_time_seconds") {
      EXPECT_EQ(labels.at("path"), "C:\\DIR\\FILE.TXT");
      EXPECT_EQ(labels.at("error"), "Cannot find file:\n\"FILE.TXT\"");
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(ExportPrometheus, MetricsLabelsHelpAndType) {
  const auto p = gpu_fixture();
  const auto text = export_profile(p, ExportFormat::prometheus, "", "p.json").text;
  const auto e = parse_exposition(text);
  ASSERT_TRUE(e.errors.empty()) << e.errors.front();
  ASSERT_FALSE(e.samples.empty());
  for (const auto& [name, labels] : e.samples) {
    EXPECT_EQ(name.rfind("truepeak_", 0), 0u) << name;
    EXPECT_TRUE(e.help.count(name)) << name;
    EXPECT_EQ(e.type.count(name) ? e.type.at(name) : "", "gauge") << name;
    EXPECT_TRUE(labels.count("machine")) << name;
  }
  // The bf16 matrix peak of the GPU, with device, dtype and kind labels, as the profile has it.
  const double expected = p.find_device("cuda:0")->peaks.flops_per_s.at("bf16");
  const std::string line_start =
      "truepeak_peak_flops_per_second{machine=\"fixture-gpu-box\",device=\"cuda:0\",device_kind="
      "\"gpu\",dtype=\"bf16\","
      "kind=\"matrix\"} ";
  const auto at = text.find(line_start);
  ASSERT_NE(at, std::string::npos) << text;
  const auto value =
      text.substr(at + line_start.size(), text.find('\n', at) - at - line_start.size());
  EXPECT_DOUBLE_EQ(std::stod(value), expected);
  // Not measured on the CPU: no graph-op overhead sample for it (never a zero standing in).
  EXPECT_EQ(text.find("truepeak_op_overhead_seconds{machine=\"fixture-gpu-box\",device=\"cpu\","
                      "device_kind=\"cpu\","
                      "kind=\"graph_op\"}"),
            std::string::npos);
  EXPECT_NE(
      text.find("truepeak_transfer_latency_seconds{machine=\"fixture-gpu-box\",device=\"cuda:0\","
                "device_kind=\"gpu\",kind=\"h2d_pinned\"} 8e-06"),
      std::string::npos);
}

TEST(ExportPrometheus, LabelValuesAreEscaped) {
  auto p = cpu_fixture();
  p.machine.label = "box \"a\"\\b";
  const auto text = export_profile(p, ExportFormat::prometheus, "cpu", "p.json").text;
  const auto e = parse_exposition(text);
  ASSERT_TRUE(e.errors.empty()) << e.errors.front();
  EXPECT_EQ(e.samples.front().second.at("machine"), "box \"a\"\\b");
}

}  // namespace
}  // namespace truepeak::report
