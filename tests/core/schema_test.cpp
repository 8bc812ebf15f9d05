// The profile schema: it parses, it is the file in the repository, a hand-written example and
// every profile the writer produces validate against it, and broken documents fail with a message
// naming the path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/profile.hpp"
#include "core/schema_check.hpp"

namespace truepeak {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

json valid_example() {
  return json::parse(read_text(fs::path(TRUEPEAK_TEST_DATA_DIR) / "schema" / "valid_profile.json"));
}

std::string joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors) out += "\n  " + e;
  return out;
}

// Some message starts with `path` followed by ": " and contains `what`.
::testing::AssertionResult has_error(const std::vector<std::string>& errors,
                                     const std::string& path, const std::string& what) {
  for (const auto& e : errors) {
    if (e.rfind(path + ": ", 0) == 0 && e.find(what) != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure()
         << "no message at " << path << " containing \"" << what << "\"; got:" << joined(errors);
}

TEST(ProfileSchema, ParsesAndIsTheFileInTheRepository) {
  const json schema = json::parse(profile_schema_text());
  EXPECT_EQ(schema.at("$schema"), "https://json-schema.org/draft/2020-12/schema");
  EXPECT_TRUE(schema.at("$defs").contains("gemm_point"));
  // The compiled-in copy must be the file under schema/ (CMake re-reads it when it changes).
  const json on_disk =
      json::parse(read_text(fs::path(TRUEPEAK_SOURCE_DIR) / "schema" / "profile.schema.json"));
  EXPECT_EQ(schema, on_disk);
}

TEST(ProfileSchema, HandWrittenExampleIsValid) {
  const json doc = valid_example();
  const auto errors = validate_profile_json(doc);
  EXPECT_TRUE(errors.empty()) << joined(errors);
  // And the reader takes it.
  const Profile p = profile_from_json(doc, "valid_profile.json");
  ASSERT_EQ(p.devices.size(), 2u);
  EXPECT_EQ(p.devices[1].transfers.size(), 3u);
}

struct Broken {
  const char* name;
  const char* pointer;  // the value to change
  json value;           // what to put there; discarded when `remove` is set
  bool remove;
  const char* message_path;
  const char* message;
};

void PrintTo(const Broken& b, std::ostream* os) { *os << b.name; }

class BrokenProfile : public ::testing::TestWithParam<Broken> {};

TEST_P(BrokenProfile, FailsNamingThePath) {
  const Broken& b = GetParam();
  json doc = valid_example();
  const json::json_pointer ptr(b.pointer);
  if (b.remove) {
    doc.at(ptr.parent_pointer()).erase(ptr.back());
  } else {
    doc[ptr] = b.value;  // creates the key where the variant adds one
  }
  EXPECT_TRUE(has_error(validate_profile_json(doc), b.message_path, b.message));
}

INSTANTIATE_TEST_SUITE_P(
    ProfileSchema, BrokenProfile,
    ::testing::Values(Broken{"number_as_string", "/devices/0/gemm/0/flops_per_s", "2.095e11", false,
                             "/devices/0/gemm/0/flops_per_s", "expected number, got string"},
                      Broken{"integer_as_string", "/devices/0/gemm/0/m", "2048", false,
                             "/devices/0/gemm/0/m", "expected integer, got string"},
                      Broken{"fraction_as_integer", "/devices/0/conv/0/groups", 1.5, false,
                             "/devices/0/conv/0/groups", "expected integer, got number"},
                      Broken{"missing_required", "/devices/0/conv/0/time_s", nullptr, true,
                             "/devices/0/conv/0/time_s", "required property is missing"},
                      Broken{"missing_section", "/devices/1/overhead", nullptr, true,
                             "/devices/1/overhead", "required property is missing"},
                      Broken{"na_in_number", "/devices/1/peaks/memory_Bps", "N/A", false,
                             "/devices/1/peaks/memory_Bps", "expected number or null, got string"},
                      Broken{"na_in_transfer_fit", "/devices/1/transfers/h2d_pinned/latency_s",
                             "N/A", false, "/devices/1/transfers/h2d_pinned/latency_s",
                             "expected number or null, got string"},
                      Broken{"null_where_measured", "/devices/0/memory/sweep/1/Bps", nullptr, false,
                             "/devices/0/memory/sweep/1/Bps", "expected number, got null"},
                      Broken{"wrong_dtype_name", "/devices/0/gemm/1/dtype", "fp32", false,
                             "/devices/0/gemm/1/dtype", "\"fp32\" is not one of"},
                      Broken{"wrong_dtype_key", "/devices/0/peaks/flops_per_s/bfloat16", 1e11,
                             false, "/devices/0/peaks/flops_per_s/bfloat16", "unknown property"},
                      Broken{"negative_rate", "/devices/0/memory/levels/0/Bps", -1.0, false,
                             "/devices/0/memory/levels/0/Bps", "less than the minimum 0"},
                      Broken{"zero_time", "/devices/0/gemm/0/time_s", 0.0, false,
                             "/devices/0/gemm/0/time_s", "must be greater than 0"},
                      Broken{"zero_samples", "/devices/0/conv/0/samples", 0, false,
                             "/devices/0/conv/0/samples", "less than the minimum 1"},
                      Broken{"string_in_library_versions", "/devices/0/libraries/onednn", 2.6,
                             false, "/devices/0/libraries/onednn", "expected string, got number"},
                      Broken{"bad_device_kind", "/devices/1/kind", "cuda", false, "/devices/1/kind",
                             "is not one of"},
                      Broken{"transfer_that_is_no_fit", "/devices/1/transfers/h2d_pinned_x", 55e9,
                             false, "/devices/1/transfers/h2d_pinned_x",
                             "expected object, got number"},
                      Broken{"boolean_as_string", "/complete", "true", false, "/complete",
                             "expected boolean, got string"},
                      Broken{"other_major_version", "/schema_version", "2.0", false,
                             "/schema_version", "does not match the pattern"},
                      Broken{"version_as_number", "/schema_version", 1.0, false, "/schema_version",
                             "expected string, got number"},
                      Broken{"local_time", "/created_utc", "2026-11-30T10:00:00+01:00", false,
                             "/created_utc", "does not match the pattern"},
                      Broken{"devices_not_array", "/devices", json::object(), false, "/devices",
                             "expected array, got object"}),
    [](const ::testing::TestParamInfo<Broken>& info) { return std::string(info.param.name); });

// A misspelt key fails too: the correct key is required, so its absence is reported where it
// belongs (extra keys alone are allowed, for later 1.x minors).
TEST(ProfileSchema, MisspeltKeyFails) {
  json doc = valid_example();
  json& point = doc["devices"][0]["gemm"][0];
  point["flops_per_sec"] = point["flops_per_s"];
  point.erase("flops_per_s");
  EXPECT_TRUE(has_error(validate_profile_json(doc), "/devices/0/gemm/0/flops_per_s",
                        "required property is missing"));

  doc = valid_example();
  json& machine = doc["machine"];
  machine["price_per_hour"] = machine["price_per_hour_usd"];
  machine.erase("price_per_hour_usd");
  EXPECT_TRUE(has_error(validate_profile_json(doc), "/machine/price_per_hour_usd",
                        "required property is missing"));
}

// The in-place levels (1.10) are held to the same rules as the triad's.
TEST(ProfileSchema, InPlaceLevelsAreCheckedLikeTheLevels) {
  json doc = valid_example();
  json& memory = doc["devices"][0]["memory"];
  memory["in_place_levels"] = memory["levels"];
  EXPECT_TRUE(validate_profile_json(doc).empty()) << joined(validate_profile_json(doc));
  memory["in_place_levels"][0].erase("Bps");
  EXPECT_TRUE(has_error(validate_profile_json(doc), "/devices/0/memory/in_place_levels/0/Bps",
                        "required property is missing"));
  memory["in_place_levels"] = json::object();
  EXPECT_TRUE(has_error(validate_profile_json(doc), "/devices/0/memory/in_place_levels",
                        "expected array, got object"));
}

TEST(ProfileSchema, LaterMinorWithExtraFieldsStaysValid) {
  json doc = valid_example();
  doc["schema_version"] = "1.7";
  doc["new_top_level_section"] = {{"anything", 1}};
  doc["devices"][0]["gemm"][0]["new_point_field_s"] = 1e-3;
  doc["devices"][0]["new_device_field"] = "x";
  const auto errors = validate_profile_json(doc);
  EXPECT_TRUE(errors.empty()) << joined(errors);
  EXPECT_NO_THROW(profile_from_json(doc, "later-minor.json"));
}

// A profile with every field filled, as the calibrate driver would write it.
Profile full_profile() {
  Profile p;
  p.tool = {"truepeak", "0.1.0", "0123456789ab", {"truepeak", "calibrate", "--quick"}};
  p.created_utc = "2026-11-30T12:34:56Z";
  p.complete = true;
  p.machine = {"box",       "box.local", "Debian GNU/Linux 12", "Example CPU @ 2.0GHz", 2,
               25769803776, 0.42};

  Device cpu;
  cpu.id = "cpu";
  cpu.kind = "cpu";
  cpu.name = "Example CPU @ 2.0GHz";
  cpu.libraries = {{"onednn", "2.6.3"}};
  cpu.properties = {{"isa", "avx512_core"}, {"threads", 2}, {"l2_bytes", 2097152}};
  cpu.memory_bytes = 25769803776;
  cpu.datasheet = {
      {{"f32", 2.56e11}, {"bf16", 5.12e11}}, {{"f32", 2.56e11}}, 2.5e10, "derived from ISA"};
  cpu.peaks = {{{"f32", 2.1e11}, {"bf16", 3.0e11}, {"int8", 6.0e11}}, {{"f32", 2.3e11}}, 1.3e10};
  GemmPoint g;
  g.shape = GemmShape{DType::bf16, 64, 4096, 4096, 2};
  g.timing = {1.5e-3, 1.7e-3, 0.05, 40};
  g.flops_per_s = g.shape.flops() / g.timing.time_s;
  g.impl = "brg:avx512_core_bf16";
  cpu.gemm.push_back(g);
  g.shape = GemmShape{DType::int8, 1, 4096, 4096, 1};
  g.impl = "";
  cpu.gemm.push_back(g);
  ConvPoint c;
  c.shape = ConvShape{DType::f32, 8, 64, 56, 56, 64, 3, 3, 2, 1, 1, 64};
  c.layout = "nhwc";
  c.timing = {2.5e-3, 2.9e-3, 0.07, 25};
  c.flops_per_s = c.shape.flops() / c.timing.time_s;
  c.impl = "jit:avx512_core";
  cpu.conv.push_back(c);
  VectorOpPoint v;
  v.op = "gelu";
  v.dtype = DType::bf16;
  v.rows = 256;
  v.cols = 1024;
  v.timing = {1.2e-4, 1.3e-4, 0.03, 20};
  v.elements_per_s = 262144 / v.timing.time_s;
  v.impl = "jit:avx512_core_bf16";
  cpu.vector_ops.push_back(v);
  cpu.memory_sweep.push_back({"triad", 1 << 20, 9.0e10, 8.5e10});
  cpu.memory_sweep.push_back({"copy", 1LL << 31, 1.2e10, 1.1e10});
  cpu.memory_levels.push_back({"L2", 2097152, 9.0e10});
  cpu.memory_levels.push_back({"DRAM", std::nullopt, 1.2e10});
  cpu.memory_sweep.push_back({"update", 1 << 20, 1.6e11, 1.5e11});
  cpu.memory_in_place_levels.push_back({"L2", 2097152, 1.6e11});
  cpu.memory_in_place_levels.push_back({"DRAM", std::nullopt, 2.1e10});
  cpu.overhead_op_s = 3.0e-6;
  cpu.overhead_graph_op_s = std::nullopt;
  cpu.conditions = {
      {"threads", 2}, {"sentinel_cv", 0.02}, {"remeasured", json::array({"f32_b1m64n64k64"})}};
  cpu.skipped.push_back({"conv bf16", "no bf16 instructions on this ISA"});
  p.devices.push_back(cpu);

  Device gpu;
  gpu.id = "cuda:0";
  gpu.kind = "gpu";
  gpu.name = "Example GPU";
  gpu.libraries = {{"cuda_runtime", "13.0"}, {"cudnn", "9.10.0"}};
  gpu.properties = {{"cc", "9.0"}};
  gpu.memory_bytes = std::nullopt;
  gpu.datasheet = {{{"bf16", 9.89e14}}, {}, std::nullopt, "table"};
  gpu.peaks = {{}, {}, std::nullopt};
  gpu.overhead_op_s = 2.5e-6;
  gpu.overhead_graph_op_s = 1.3e-6;
  gpu.transfers["h2d_pinned"] = {2.0e-6, 5.5e10, {{4096, 2.1e-6}, {1 << 30, 0.0195}}};
  gpu.transfers["d2h_pageable"] = {std::nullopt, std::nullopt, {}};
  gpu.bidirectional_Bps = 1.0e11;
  p.devices.push_back(gpu);
  return p;
}

TEST(ProfileSchema, WrittenProfileValidatesAndRoundTrips) {
  const Profile p = full_profile();
  const json doc = to_json(p);
  const auto errors = validate_profile_json(doc);
  EXPECT_TRUE(errors.empty()) << joined(errors);

  const Profile back = profile_from_json(doc, "round-trip");
  EXPECT_EQ(to_json(back), doc);
  // Spot checks through the data model, not only through JSON.
  EXPECT_EQ(back.schema_version, schema_version_string());
  EXPECT_EQ(back.tool.argv, p.tool.argv);
  EXPECT_EQ(back.machine.price_per_hour_usd, p.machine.price_per_hour_usd);
  ASSERT_EQ(back.devices.size(), 2u);
  const Device& cpu = back.devices[0];
  ASSERT_EQ(cpu.gemm.size(), 2u);
  EXPECT_EQ(cpu.gemm[0].shape, p.devices[0].gemm[0].shape);
  EXPECT_EQ(cpu.gemm[1].shape.dtype, DType::int8);
  EXPECT_DOUBLE_EQ(cpu.gemm[0].flops_per_s, p.devices[0].gemm[0].flops_per_s);
  EXPECT_EQ(cpu.gemm[0].timing.samples, 40);
  EXPECT_EQ(cpu.gemm[0].impl, "brg:avx512_core_bf16");
  ASSERT_EQ(cpu.vector_ops.size(), 1u);
  EXPECT_EQ(cpu.vector_ops[0].op, "gelu");
  EXPECT_EQ(cpu.vector_ops[0].dtype, DType::bf16);
  EXPECT_EQ(cpu.vector_ops[0].cols, 1024);
  EXPECT_DOUBLE_EQ(cpu.vector_ops[0].elements_per_s, p.devices[0].vector_ops[0].elements_per_s);
  EXPECT_EQ(cpu.vector_ops[0].timing.samples, 20);
  ASSERT_EQ(cpu.conv.size(), 1u);
  EXPECT_EQ(cpu.conv[0].shape, p.devices[0].conv[0].shape);
  EXPECT_EQ(cpu.conv[0].layout, "nhwc");
  EXPECT_EQ(cpu.memory_sweep[1].bytes, 1LL << 31);
  EXPECT_EQ(cpu.memory_levels[1].bytes, std::nullopt);
  ASSERT_EQ(cpu.memory_in_place_levels.size(), 2u);
  EXPECT_EQ(cpu.memory_in_place_levels[0].bytes, 2097152);
  EXPECT_EQ(cpu.memory_in_place_levels[1].bytes, std::nullopt);
  EXPECT_DOUBLE_EQ(cpu.memory_in_place_levels[1].Bps, 2.1e10);
  // Where nothing was measured in place (a GPU), the profile has no in_place_levels at all.
  EXPECT_TRUE(doc["devices"][0]["memory"].contains("in_place_levels"));
  EXPECT_FALSE(doc["devices"][1]["memory"].contains("in_place_levels"));
  EXPECT_TRUE(back.devices[1].memory_in_place_levels.empty());
  EXPECT_EQ(cpu.overhead_graph_op_s, std::nullopt);
  EXPECT_EQ(cpu.conditions, p.devices[0].conditions);
  EXPECT_EQ(cpu.peaks.flops_per_s, p.devices[0].peaks.flops_per_s);
  const Device& gpu = back.devices[1];
  EXPECT_EQ(gpu.memory_bytes, std::nullopt);
  ASSERT_EQ(gpu.transfers.count("h2d_pinned"), 1u);
  EXPECT_EQ(gpu.transfers.at("h2d_pinned").points.size(), 2u);
  EXPECT_EQ(gpu.transfers.at("d2h_pageable").latency_s, std::nullopt);
  EXPECT_EQ(gpu.bidirectional_Bps, 1.0e11);
}

TEST(ProfileSchema, FileWrittenByWriteProfileValidates) {
  const fs::path dir =
      fs::temp_directory_path() / ("truepeak_schema_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / "profile.json";
  write_profile(path.string(), full_profile());
  const auto errors = validate_profile_json(json::parse(read_text(path)));
  EXPECT_TRUE(errors.empty()) << joined(errors);
  EXPECT_NO_THROW(read_profile(path.string()));
  fs::remove_all(dir);
}

TEST(ProfileSchema, ReaderRejectsAnotherMajorVersion) {
  json doc = to_json(full_profile());
  doc["schema_version"] = "2.0";
  try {
    profile_from_json(doc, "future.json");
    FAIL() << "a 2.0 profile was accepted";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("2.0"), std::string::npos) << message;
    EXPECT_NE(message.find("future.json"), std::string::npos) << message;
    EXPECT_NE(message.find("/schema_version"), std::string::npos) << message;
  }
  // A later minor of the same major is read.
  doc["schema_version"] = "1.99";
  EXPECT_NO_THROW(profile_from_json(doc, "later.json"));
}

// Every profile committed under results/ (one folder per machine) was written by the tool and
// must match the schema.
TEST(ProfileSchema, CommittedResultsValidate) {
  const fs::path results = fs::path(TRUEPEAK_SOURCE_DIR) / "results";
  int checked = 0;
  if (fs::is_directory(results)) {
    for (const auto& entry : fs::recursive_directory_iterator(results)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
      json doc;
      ASSERT_NO_THROW(doc = json::parse(read_text(entry.path()))) << entry.path();
      if (!doc.is_object() || !doc.contains("schema_version")) continue;  // not a profile
      if (doc.contains("rows") && doc.contains("summary")) continue;       // a validation report
      const auto errors = validate_profile_json(doc);
      EXPECT_TRUE(errors.empty()) << entry.path() << ":" << joined(errors);
      ++checked;
    }
  }
  EXPECT_GE(checked, 1) << "no profiles under " << results;
}

}  // namespace
}  // namespace truepeak
