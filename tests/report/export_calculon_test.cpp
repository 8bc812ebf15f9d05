// The Calculon export against Calculon's documented system format
// (data/calculon_system_example.json, from its systems/*.json, and the checks
// calculon/{system,processor,memory,network}.py make on load), the properties of its GEMM curve,
// and its networks.
#include "report/export_calculon.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "core/error.hpp"
#include "report/export.hpp"
#include "report/summary.hpp"
#include "report_test_util.hpp"

namespace truepeak::report {
namespace {

using nlohmann::json;
using test::committed_profile;
using test::cpu_fixture;
using test::data_path;
using test::gpu_fixture;
using test::joined;
using test::read_json;

const char* kH200 = "nvidia-h200/nvidia-h200-default.json";

json calculon_export(const Profile& p, const CalculonNetworks* networks = nullptr) {
  return json::parse(export_calculon(p, pick_device(p, "", "p.json"), networks).text);
}

calculon::Curve to_curve(const json& table) {
  calculon::Curve curve;
  for (const auto& entry : table)
    curve.emplace_back(entry[0].get<double>(), entry[1].get<double>());
  return curve;
}

// What Calculon asserts when it loads a table: thresholds strictly decreasing, efficiencies in
// (0, 1], and (so that no op size fails the lookup) a last threshold of 0.
void expect_valid_table(const json& table, const std::string& what) {
  ASSERT_TRUE(table.is_array()) << what;
  ASSERT_FALSE(table.empty()) << what;
  double last = INFINITY;
  for (const auto& entry : table) {
    ASSERT_TRUE(entry.is_array() && entry.size() == 2) << what;
    EXPECT_LT(entry[0].get<double>(), last) << what;
    last = entry[0].get<double>();
    EXPECT_GT(entry[1].get<double>(), 0) << what;
    EXPECT_LE(entry[1].get<double>(), 1) << what;
  }
  EXPECT_EQ(table.back()[0].get<double>(), 0) << what;
}

void expect_same_keys(const json& out, const json& example, const std::string& what) {
  std::set<std::string> a, b;
  for (const auto& [k, v] : out.items()) a.insert(k);
  for (const auto& [k, v] : example.items()) b.insert(k);
  EXPECT_EQ(a, b) << what;
}

TEST(ExportCalculon, FieldByFieldAgainstTheDocumentedFormat) {
  const auto example = read_json(data_path("calculon_system_example.json"));
  for (const auto& p : {gpu_fixture(), committed_profile(kH200)}) {
    const auto out = calculon_export(p);
    for (const auto& [key, value] : example.items()) {
      ASSERT_TRUE(out.contains(key)) << key;
      EXPECT_EQ(out[key].type(), value.type()) << key;
    }
    const std::set<std::string> calculon_types = {"float8", "float16", "float32", "bfloat16"};
    for (const char* engine : {"matrix", "vector"}) {
      ASSERT_FALSE(out[engine].empty()) << engine;
      for (const auto& [dtype, entry] : out[engine].items()) {
        EXPECT_TRUE(calculon_types.count(dtype)) << dtype;
        expect_same_keys(entry, example[engine]["float16"], std::string(engine) + " " + dtype);
        EXPECT_GT(entry["tflops"].get<double>(), 0);
        expect_valid_table(entry["gflops_efficiency"], std::string(engine) + " " + dtype);
      }
    }
    for (const char* mem : {"mem1", "mem2"}) {
      expect_same_keys(out[mem], example[mem], mem);
      EXPECT_GT(out[mem]["GiB"].get<double>(), 0) << mem;
      EXPECT_GT(out[mem]["GBps"].get<double>(), 0) << mem;
      expect_valid_table(out[mem]["MB_efficiency"], mem);
    }
    EXPECT_EQ(out["processing_mode"], "roofline");
    // Networks: exactly Calculon's keys, and the checks Network() makes.
    ASSERT_FALSE(out["networks"].empty());
    const auto& model = example["networks"][0];
    for (const auto& n : out["networks"]) {
      expect_same_keys(n, model, "network");
      expect_same_keys(n["ops"], model["ops"], "network ops");
      EXPECT_GT(n["bandwidth"].get<double>(), 0);
      EXPECT_GT(n["efficiency"].get<double>(), 0);
      EXPECT_LE(n["efficiency"].get<double>(), 1);
      EXPECT_TRUE(n["size"].is_number_integer());
      EXPECT_GE(n["latency"].get<double>(), 0);
      EXPECT_TRUE(n["must_be_filled"].is_boolean());
      EXPECT_GE(n["processor_usage"].get<double>(), 0);
      EXPECT_LT(n["processor_usage"].get<double>(), 1);
      for (const auto& [op, entry] : n["ops"].items()) {
        EXPECT_GT(entry[0].get<double>(), 0) << op;
        EXPECT_EQ(entry[1].is_null(), op == "p2p") << op;
      }
    }
  }
}

TEST(ExportCalculon, EveryMeasuredDtypeInMatrixAndVector) {
  const auto out = calculon_export(committed_profile(kH200));
  const std::set<std::string> measured = {"float32", "float16", "bfloat16", "float8"};
  for (const char* engine : {"matrix", "vector"}) {
    std::set<std::string> names;
    for (const auto& [name, entry] : out[engine].items()) names.insert(name);
    EXPECT_EQ(names, measured) << engine;
  }
  // No bf16 or fp8 FMA kernel: the f16 one's figure, and the file says so.
  EXPECT_EQ(out["vector"]["bfloat16"], out["vector"]["float16"]);
  EXPECT_NE(out["truepeak"]["vector"]["float8"].get<std::string>().find("f16 FMA"),
            std::string::npos);
  EXPECT_EQ(out["truepeak"]["vector"]["float16"].get<std::string>().rfind("measured", 0), 0u);
}

TEST(ExportCalculon, AlignedShapes) {
  using calculon::aligned;
  EXPECT_TRUE(aligned({DType::bf16, 8, 4096, 4096, 1}));
  EXPECT_FALSE(aligned({DType::bf16, 1, 4096, 4096, 1}));
  EXPECT_FALSE(aligned({DType::bf16, 8192, 30001, 1024, 1}));
  EXPECT_FALSE(aligned({DType::bf16, 4096, 4095, 4096, 1}));
  EXPECT_FALSE(aligned({DType::fp8_e4m3, 8, 4096, 4096, 1}));
  EXPECT_TRUE(aligned({DType::fp8_e4m3, 16, 4096, 4096, 1}));
  EXPECT_TRUE(aligned({DType::f32, 4, 4096, 4096, 1}));
}

// Each entry's FLOP count and rate, checked against the points it was built from: sorted, no
// entry more than 2x off its neighbours, never slower than a smaller size, and at each measured
// size between the fastest aligned point there and the best at that size or below.
void expect_curve_properties(const Device& device, DType dtype, const json& entry) {
  const auto what = std::string(to_string(dtype));
  expect_valid_table(entry["gflops_efficiency"], what);
  const auto curve = to_curve(entry["gflops_efficiency"]);
  const double peak = entry["tflops"].get<double>() * 1e12;
  for (std::size_t i = 1; i < curve.size(); ++i) {
    const double a = curve[i - 1].second, b = curve[i].second;
    EXPECT_LE(std::max(a, b) / std::min(a, b), calculon::kMaxCurveStep * (1 + 1e-9)) << what << i;
    EXPECT_LE(std::max(a, b) / std::min(a, b), 2.0) << what << i;
    EXPECT_GE(a, b) << what << " entry " << i;  // larger sizes first
  }
  for (const auto& p : device.gemm) {
    if (p.shape.dtype != dtype || p.cold_weights || !calculon::aligned(p.shape)) continue;
    const double size = p.shape.flops() / 1e9;
    double best_here = 0, best_below = 0;
    for (const auto& q : device.gemm) {
      if (q.shape.dtype != dtype || q.cold_weights || !calculon::aligned(q.shape)) continue;
      if (q.shape.flops() == p.shape.flops()) best_here = std::max(best_here, q.flops_per_s);
      if (q.shape.flops() <= p.shape.flops()) best_below = std::max(best_below, q.flops_per_s);
    }
    const double rate = *calculon::lookup(curve, size) * peak;
    EXPECT_GE(rate, best_here * (1 - 1e-9)) << p.shape.str();
    EXPECT_LE(rate, best_below * (1 + 1e-9)) << p.shape.str();
  }
}

TEST(ExportCalculon, CurveOfTheCommittedProfile) {
  const auto p = committed_profile(kH200);
  const auto& gpu = pick_device(p, "", "p.json");
  const auto out = calculon_export(p);
  for (const auto& [name, type] : {std::pair{"float32", DType::f32},
                                   {"float16", DType::f16},
                                   {"bfloat16", DType::bf16},
                                   {"float8", DType::fp8_e4m3}})
    expect_curve_properties(gpu, type, out["matrix"][name]);
  // The unaligned 8192x30001x1024 (503 GFLOP, 0.105 of the peak) sets nothing: GEMMs of that size
  // read at least what 4096^3 (137 GFLOP) reaches.
  const auto bf16 = to_curve(out["matrix"]["bfloat16"]["gflops_efficiency"]);
  EXPECT_GE(*calculon::lookup(bf16, 503.3), *calculon::lookup(bf16, 137.44));
  EXPECT_GT(*calculon::lookup(bf16, 800), 0.6);
}

TEST(ExportCalculon, CurveIgnoresUnalignedAndColdPoints) {
  auto p = gpu_fixture();
  auto& gpu = p.devices[1];
  ASSERT_EQ(gpu.id, "cuda:0");
  const auto before = calculon::gemm_curve(gpu.gemm, DType::bf16, 989e12);
  expect_curve_properties(gpu, DType::bf16, calculon_export(p)["matrix"]["bfloat16"]);
  for (const double rate : {1e12, 980e12}) {
    for (const bool cold : {false, true}) {
      GemmPoint odd;
      odd.shape = cold ? GemmShape{DType::bf16, 512, 3072, 3072, 1}
                       : GemmShape{DType::bf16, 4096, 4095, 4096, 1};
      odd.cold_weights = cold;
      odd.flops_per_s = rate;
      gpu.gemm.push_back(odd);
    }
  }
  EXPECT_EQ(calculon::gemm_curve(gpu.gemm, DType::bf16, 989e12), before);
  EXPECT_TRUE(calculon::gemm_curve({}, DType::bf16, 989e12).empty());
}

// A point faster than every smaller one sets the curve at its size: Calculon's peak x efficiency
// reproduces its rate.
TEST(ExportCalculon, CurveReproducesThePointsThatRaiseIt) {
  const auto p = committed_profile(kH200);
  const auto& gpu = pick_device(p, "", "p.json");
  const auto out = calculon_export(p);
  const auto& entry = out["matrix"]["bfloat16"];
  const auto curve = to_curve(entry["gflops_efficiency"]);
  int raising = 0;
  for (const auto& pt : gpu.gemm) {
    if (pt.shape.dtype != DType::bf16 || pt.cold_weights || !calculon::aligned(pt.shape)) continue;
    bool raises = true;
    for (const auto& q : gpu.gemm) {
      if (q.shape.dtype == DType::bf16 && !q.cold_weights && calculon::aligned(q.shape) &&
          q.shape.flops() <= pt.shape.flops() && q.flops_per_s > pt.flops_per_s)
        raises = false;
    }
    if (!raises) continue;
    ++raising;
    const double rate =
        *calculon::lookup(curve, pt.shape.flops() / 1e9) * entry["tflops"].get<double>() * 1e12;
    EXPECT_NEAR(rate / pt.flops_per_s, 1.0, 1e-9) << pt.shape.str();
  }
  EXPECT_GE(raising, 5);
}

TEST(ExportCalculon, MemoriesFromTheSweepAndTheHostLink) {
  const auto out = calculon_export(gpu_fixture());
  EXPECT_DOUBLE_EQ(out["matrix"]["bfloat16"]["tflops"].get<double>(), 989.0);
  EXPECT_FALSE(out["matrix"].contains("int8"));  // no Calculon datatype
  EXPECT_DOUBLE_EQ(out["mem1"]["GBps"].get<double>(), 3350.0);
  EXPECT_NEAR(out["mem1"]["GiB"].get<double>(), 80e9 / (1 << 30), 1e-9);
  // The largest working set streams from HBM: its efficiency is the measured/datasheet ratio.
  EXPECT_NEAR(*calculon::lookup(to_curve(out["mem1"]["MB_efficiency"]), 1e9), 0.8, 1e-9);
  EXPECT_DOUBLE_EQ(out["mem2"]["GBps"].get<double>(), 55.0);
}

TEST(ExportCalculon, NetworksFromTheMeasuredHostLink) {
  const auto p = gpu_fixture();
  const auto& gpu = *p.find_device("cuda:0");
  const auto r = export_calculon(p, gpu);
  EXPECT_TRUE(r.warnings.empty());
  const auto out = json::parse(r.text);
  ASSERT_EQ(out["networks"].size(), 1u);
  const auto& n = out["networks"][0];
  const auto link = *measured_host_link(gpu);
  EXPECT_DOUBLE_EQ(
      link.Bps, std::min(*gpu.transfers.at("h2d_pinned").Bps, *gpu.transfers.at("d2h_pinned").Bps));
  EXPECT_DOUBLE_EQ(n["bandwidth"].get<double>(), link.Bps / 1e9);
  EXPECT_DOUBLE_EQ(n["latency"].get<double>(), *gpu.transfers.at("h2d_pinned").latency_s +
                                                   *gpu.transfers.at("d2h_pinned").latency_s);
  EXPECT_EQ(n["size"], 1);  // the profile's one GPU
  EXPECT_EQ(out["truepeak"]["networks"].get<std::string>().rfind("measured", 0), 0u);
}

TEST(ExportCalculon, WithoutMeasuredFiguresAPlaceholderSaidLoudly) {
  const auto r = export_calculon(cpu_fixture(), cpu_fixture().devices[0]);
  const auto out = json::parse(r.text);
  ASSERT_EQ(out["networks"].size(), 1u);
  EXPECT_EQ(out["networks"][0]["size"], 1);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("NOT MEASURED"), std::string::npos);
  EXPECT_NE(out["truepeak"]["networks"].get<std::string>().find("NOT MEASURED"), std::string::npos);
  // What a CPU lacks besides.
  EXPECT_FALSE(out.contains("mem2"));
  EXPECT_NE(joined(r.notes).find("mem2"), std::string::npos);
  EXPECT_TRUE(out["matrix"].contains("bfloat16"));
  EXPECT_TRUE(out["vector"].contains("bfloat16"));  // the f32 FMA figure: no f16 one measured
  EXPECT_FALSE(out["vector"].contains("f64"));
}

TEST(ExportCalculon, UserNetworksInEveryAcceptedForm) {
  const auto example = read_json(data_path("calculon_system_example.json"));
  const auto& net = example["networks"][0];
  for (const auto& block : {example, example["networks"], net}) {
    const auto networks = parse_calculon_networks(block, "net.json");
    const auto r = export_calculon(gpu_fixture(), gpu_fixture().devices[1], &networks);
    EXPECT_TRUE(r.warnings.empty());
    const auto out = json::parse(r.text);
    ASSERT_EQ(out["networks"].size(), 1u);
    EXPECT_EQ(out["networks"][0], net);
    EXPECT_EQ(out["truepeak"]["networks"], "given: net.json");
  }
}

TEST(ExportCalculon, BadNetworkBlocksAreOneClearError) {
  const auto good = read_json(data_path("calculon_system_example.json"))["networks"][0];
  std::vector<std::pair<std::string, json>> bad;
  auto with = [&](const char* what, auto edit) {
    json n = good;
    edit(n);
    bad.emplace_back(what, n);
  };
  with("efficiency", [](json& n) { n["efficiency"] = 1.5; });
  with("bandwidth", [](json& n) { n["bandwidth"] = "fast"; });
  with("'latency'", [](json& n) { n.erase("latency"); });
  with("'speed'", [](json& n) { n["speed"] = 1; });
  with("size", [](json& n) { n["size"] = -1; });
  with("processor_usage", [](json& n) { n["processor_usage"] = 1.0; });
  with("ops.p2p[1]", [](json& n) { n["ops"]["p2p"][1] = 0; });
  with("ops.all_reduce[1]", [](json& n) { n["ops"]["all_reduce"][1] = nullptr; });
  with("ops", [](json& n) { n["ops"].erase("all_gather"); });
  with("must_be_filled", [](json& n) { n["must_be_filled"] = 1; });
  bad.emplace_back("no network", json::array());
  bad.emplace_back("no network", json("a string"));
  bad.emplace_back("no network", json{{"networks", json::array()}});
  for (const auto& [what, block] : bad) {
    try {
      parse_calculon_networks(block, "net.json");
      ADD_FAILURE() << "accepted: " << block.dump();
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind("net.json: ", 0), 0u) << message;
      EXPECT_NE(message.find(what), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

TEST(ExportCalculon, NetworkFileThroughTheDispatch) {
  namespace fs = std::filesystem;
  const auto dir =
      fs::temp_directory_path() / ("truepeak_export_net_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto good = (dir / "net.json").string();
  const auto bad = (dir / "bad.json").string();
  write_file_atomic(good, read_json(data_path("calculon_system_example.json")).dump());
  write_file_atomic(bad, "{\"networks\": [{\"bandwidth\": 1}]}");
  const auto p = gpu_fixture();
  const auto out =
      json::parse(export_profile(p, ExportFormat::calculon, "", "p.json", {good}).text);
  EXPECT_EQ(out["networks"][0]["bandwidth"], 300);
  EXPECT_THROW(export_profile(p, ExportFormat::calculon, "", "p.json", {bad}), InputError);
  EXPECT_THROW(export_profile(p, ExportFormat::calculon, "", "p.json", {(dir / "none").string()}),
               InputError);
  EXPECT_THROW(export_profile(p, ExportFormat::csv, "", "p.json", {good}), InputError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace truepeak::report
