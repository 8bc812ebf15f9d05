// Runtime records (schema 1.12; fusion since 1.13, conv_dispatch since 1.14, conv_batchnorm_apart since 1.15, the dispatch paths' costs since 1.16, fused_activations since 1.17, cold_op_s since 1.18): the reader and writer keep every field, the
// schema accepts what a probe writes and rejects a broken record naming the path, and profiles
// without runtimes read and write as before.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
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

json record_fixture() {
  return json::parse(
      read_text(fs::path(TRUEPEAK_TEST_DATA_DIR) / "runtimes" / "torch_jit_record.json"));
}

json profile_example() {
  return json::parse(read_text(fs::path(TRUEPEAK_TEST_DATA_DIR) / "schema" / "valid_profile.json"));
}

std::string joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors) out += "\n  " + e;
  return out;
}

::testing::AssertionResult has_error(const std::vector<std::string>& errors,
                                     const std::string& path, const std::string& what) {
  for (const auto& e : errors) {
    if (e.rfind(path + ": ", 0) == 0 && e.find(what) != std::string::npos)
      return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "no message at " << path << " containing \"" << what << "\"; got:" << joined(errors);
}

TEST(RuntimeRecord, SchemaVersionIsOneNineteen) { EXPECT_EQ(schema_version_string(), "1.19"); }

TEST(RuntimeRecord, FixtureValidatesAndReadsEveryField) {
  const json doc = record_fixture();
  const auto errors = validate_runtime_record_json(doc);
  ASSERT_TRUE(errors.empty()) << joined(errors);
  const RuntimeRecord r = runtime_record_from_json(doc, "record.json");
  EXPECT_EQ(r.runtime, "torch-jit");
  EXPECT_EQ(r.device, "cpu");
  EXPECT_EQ(r.framework, "torch 1.13.1");
  EXPECT_EQ(r.versions.at("onednn"), "2.6.3");
  EXPECT_EQ(r.threads, 2);
  ASSERT_EQ(r.dtypes.size(), 1u);
  EXPECT_EQ(r.dtypes[0], DType::f32);
  EXPECT_EQ(r.settings.at("allocator"), "glibc default");
  EXPECT_DOUBLE_EQ(r.op_s, 9.4e-6);
  ASSERT_EQ(r.kind_op_s.size(), 3u);
  EXPECT_EQ(r.kind_op_s[0].kind, "elementwise:relu");
  EXPECT_EQ(r.kind_op_s[0].dtype, std::nullopt);
  EXPECT_EQ(r.kind_op_s[2].dtype, DType::bf16);
  ASSERT_EQ(r.own_kernels.size(), 2u);
  EXPECT_EQ(r.own_kernels[0].kind, "pool:max");
  EXPECT_DOUBLE_EQ(r.own_kernels[0].elements_per_s, 1.1e9);
  ASSERT_TRUE(r.layout.has_value());
  EXPECT_EQ(r.layout->blocked_ops, (std::vector<std::string>{"elementwise:relu", "pool:max"}));
  EXPECT_EQ(r.layout->to_blocked_copies, 2);
  EXPECT_TRUE(r.layout->expand_broadcast);
  EXPECT_EQ(r.layout->group_reorder_widths, (std::vector<std::int64_t>{2, 4, 8}));
  EXPECT_EQ(r.conv_layout, "blocked");
  EXPECT_TRUE(r.linears_as_convolutions);
  EXPECT_EQ(r.in_place.size(), 2u);
  EXPECT_FALSE(r.fuse_activations);
  ASSERT_EQ(r.memory_levels.size(), 1u);
  EXPECT_EQ(r.memory_levels[0].bytes, std::nullopt);
  ASSERT_EQ(r.gemm.size(), 1u);
  EXPECT_EQ(r.gemm[0].impl, "mlas");
  ASSERT_EQ(r.conv.size(), 1u);
  EXPECT_EQ(r.conv[0].layout, "blocked");
  EXPECT_EQ(r.probes.size(), 1u);
  EXPECT_EQ(r.calibration_s, 31.5);
}

TEST(RuntimeRecord, WriteThenReadKeepsValuesAndUnknownFields) {
  json doc = record_fixture();
  doc["python"] = "/usr/bin/python3";
  doc["from_a_later_minor"] = {{"anything", 1}};
  const RuntimeRecord r = runtime_record_from_json(doc, "record.json");
  EXPECT_EQ(r.python, "/usr/bin/python3");
  const json written = to_json(r);
  EXPECT_TRUE(validate_runtime_record_json(written).empty())
      << joined(validate_runtime_record_json(written));
  EXPECT_EQ(written.at("from_a_later_minor"), doc.at("from_a_later_minor"));
  EXPECT_EQ(to_json(runtime_record_from_json(written, "again")), written);
  // Every field of the fixture comes back with its value.
  for (const auto& [key, value] : doc.items()) {
    ASSERT_TRUE(written.contains(key)) << key;
    if (key == "gemm" || key == "conv") continue;  // the writer adds the points' defaults
    EXPECT_EQ(written.at(key), value) << key;
  }
}

TEST(RuntimeRecord, ALayoutsChannelRuleRoundTripsAndIsChecked) {
  json doc = record_fixture();
  // Absent: every convolution runs blocked, and nothing is written.
  EXPECT_EQ(runtime_record_from_json(doc, "record.json").layout->conv_channel_multiple, 1);
  EXPECT_FALSE(to_json(runtime_record_from_json(doc, "record.json"))["layout"].contains("conv_channel_multiple"));
  doc["layout"]["conv_channel_multiple"] = 4;
  doc["layout"]["conv_small_input_channels"] = 8;
  ASSERT_TRUE(validate_runtime_record_json(doc).empty()) << joined(validate_runtime_record_json(doc));
  const RuntimeRecord r = runtime_record_from_json(doc, "record.json");
  EXPECT_EQ(r.layout->conv_channel_multiple, 4);
  EXPECT_EQ(r.layout->conv_small_input_channels, 8);
  EXPECT_EQ(to_json(r)["layout"]["conv_channel_multiple"], 4);
  EXPECT_EQ(to_json(r)["layout"]["conv_small_input_channels"], 8);
  EXPECT_FALSE(r.layout->broadcast_plain);
  EXPECT_FALSE(to_json(r)["layout"].contains("broadcast_plain"));
  doc["layout"]["broadcast_plain"] = true;
  EXPECT_TRUE(runtime_record_from_json(doc, "record.json").layout->broadcast_plain);
  EXPECT_EQ(to_json(runtime_record_from_json(doc, "record.json"))["layout"]["broadcast_plain"], true);
  doc["layout"]["conv_channel_multiple"] = 0;
  EXPECT_FALSE(validate_runtime_record_json(doc).empty());
}

TEST(RuntimeRecord, ProfileWithRuntimesRoundTripsAndValidates) {
  json doc = profile_example();
  doc["devices"][0]["runtimes"] = {{"torch-jit", record_fixture()},
                                   {"torch-jit:old", record_fixture()}};
  const auto errors = validate_profile_json(doc);
  ASSERT_TRUE(errors.empty()) << joined(errors);
  const Profile p = profile_from_json(doc, "profile.json");
  ASSERT_EQ(p.devices[0].runtimes.size(), 2u);
  EXPECT_EQ(p.devices[0].runtimes.at("torch-jit:old").framework, "torch 1.13.1");
  EXPECT_TRUE(p.devices[1].runtimes.empty());
  const json written = to_json(p);
  EXPECT_TRUE(validate_profile_json(written).empty()) << joined(validate_profile_json(written));
  EXPECT_EQ(to_json(profile_from_json(written, "again")), written);
  // A device without runtimes is written without the section, as before 1.12.
  EXPECT_FALSE(written["devices"][1].contains("runtimes"));
}

TEST(RuntimeRecord, ProfileWithoutRuntimesReads) {
  const json doc = profile_example();
  ASSERT_FALSE(doc["devices"][0].contains("runtimes"));
  const Profile p = profile_from_json(doc, "profile.json");
  EXPECT_TRUE(p.devices[0].runtimes.empty());
}

struct BrokenRecord {
  const char* name;
  const char* pointer;
  json value;
  bool remove;
  const char* message_path;
  const char* message;
};

void PrintTo(const BrokenRecord& b, std::ostream* os) { *os << b.name; }

class BrokenRuntimeRecord : public ::testing::TestWithParam<BrokenRecord> {};

TEST_P(BrokenRuntimeRecord, FailsNamingThePath) {
  const BrokenRecord& b = GetParam();
  json doc = record_fixture();
  const json::json_pointer ptr(b.pointer);
  if (b.remove) {
    doc.at(ptr.parent_pointer()).erase(ptr.back());
  } else {
    doc[ptr] = b.value;
  }
  EXPECT_TRUE(has_error(validate_runtime_record_json(doc), b.message_path, b.message));
  // Stored under a device, the same record fails the profile's check at its place there.
  json profile = profile_example();
  profile["devices"][0]["runtimes"]["torch-jit"] = doc;
  EXPECT_TRUE(has_error(validate_profile_json(profile),
                        std::string("/devices/0/runtimes/torch-jit") + b.message_path, b.message));
}

INSTANTIATE_TEST_SUITE_P(
    RuntimeRecord, BrokenRuntimeRecord,
    ::testing::Values(
        BrokenRecord{"unknown_runtime", "/runtime", "torch-jitt", false, "/runtime",
                     "is not one of"},
        BrokenRecord{"negative_op_s", "/op_s", -1e-6, false, "/op_s", "less than the minimum 0"},
        BrokenRecord{"op_s_as_string", "/op_s", "9us", false, "/op_s",
                     "expected number, got string"},
        BrokenRecord{"missing_op_s", "/op_s", nullptr, true, "/op_s",
                     "required property is missing"},
        BrokenRecord{"zero_own_rate", "/own_kernels/0/elements_per_s", 0.0, false,
                     "/own_kernels/0/elements_per_s", "must be greater than 0"},
        BrokenRecord{"bad_kind", "/kind_op_s/0/kind", "Elementwise relu", false,
                     "/kind_op_s/0/kind", "does not match the pattern"},
        BrokenRecord{"bad_dtype", "/dtypes/0", "fp32", false, "/dtypes/0", "is not one of"},
        BrokenRecord{"no_dtypes", "/dtypes", json::array(), false, "/dtypes",
                     "expected at least 1"},
        BrokenRecord{"too_many_copies", "/layout/to_blocked_copies", 9, false, "/layout",
                     "matches none of the anyOf alternatives"},
        BrokenRecord{"zero_memory_rate", "/memory/levels/0/Bps", 0.0, false, "/memory/levels/0/Bps",
                     "must be greater than 0"},
        BrokenRecord{"zero_gemm_rate", "/gemm/0/flops_per_s", 0.0, false, "/gemm/0/flops_per_s",
                     "must be greater than 0"},
        BrokenRecord{"unknown_conv_layout", "/conv_layout", "hwcn", false, "/conv_layout",
                     "is not one of"},
        BrokenRecord{"in_place_pool", "/in_place/0", "pool:max", false, "/in_place/0",
                     "does not match the pattern"},
        BrokenRecord{"zero_threads", "/threads", 0, false, "/threads", "less than the minimum 1"},
        BrokenRecord{"bad_device", "/device", "CPU 0", false, "/device",
                     "does not match the pattern"}),
    [](const ::testing::TestParamInfo<BrokenRecord>& info) {
      return std::string(info.param.name);
    });

TEST(RuntimeRecord, NonFiniteNumbersAreRejectedAnywhere) {
  json doc = record_fixture();
  doc["settings"]["scale"] = std::numeric_limits<double>::quiet_NaN();
  doc["op_s"] = std::numeric_limits<double>::infinity();
  const auto errors = validate_runtime_record_json(doc);
  EXPECT_TRUE(has_error(errors, "/settings/scale", "not a finite number"));
  EXPECT_TRUE(has_error(errors, "/op_s", "not a finite number"));
}

TEST(RuntimeRecord, ProfileKeyMustNameARuntime) {
  json doc = profile_example();
  doc["devices"][0]["runtimes"] = {{"pytorch", record_fixture()}};
  EXPECT_TRUE(
      has_error(validate_profile_json(doc), "/devices/0/runtimes/pytorch", "(property name)"));
}

TEST(RuntimeRecord, ReaderNamesThePathOfAMistypedField) {
  json doc = record_fixture();
  doc["threads"] = "two";
  try {
    runtime_record_from_json(doc, "probe output");
    FAIL() << "a mistyped record was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "probe output: /threads: expected an integer, got string");
  }
  json profile = profile_example();
  profile["devices"][0]["runtimes"] = {{"torch-jit", doc}};
  try {
    profile_from_json(profile, "p.json");
    FAIL() << "a profile with a mistyped record was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "p.json: /devices/0/runtimes/torch-jit/threads: expected an integer"),
              std::string::npos)
        << e.what();
  }
}

json fusion_example() {
  return {{"pointwise", true}, {"into_reductions", true}, {"into_products", false}, {"graph_s", 1.5e-5}};
}

// The message profile_from_json gives for a record under `key` whose `field` is `value`;
// "(read)" when it reads.
std::string field_error(const char* key, const char* field, const json& value) {
  json doc = record_fixture();
  doc[field] = value;
  json profile = profile_example();
  profile["devices"][0]["runtimes"] = {{key, doc}};
  try {
    profile_from_json(profile, "p.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(read)";
}

std::string fusion_error(const json& fusion) { return field_error("torch-compile", "fusion", fusion); }

TEST(RuntimeRecord, BatchnormApartRoundTripsAndIsRefusedWhenNotABoolean) {
  json doc = record_fixture();
  EXPECT_FALSE(runtime_record_from_json(doc, "record.json").conv_batchnorm_apart);  // absent
  doc["conv_batchnorm_apart"] = true;
  ASSERT_TRUE(validate_runtime_record_json(doc).empty()) << joined(validate_runtime_record_json(doc));
  const RuntimeRecord r = runtime_record_from_json(doc, "record.json");
  EXPECT_TRUE(r.conv_batchnorm_apart);
  const json written = to_json(r);
  EXPECT_EQ(written.at("conv_batchnorm_apart"), true);
  EXPECT_TRUE(validate_runtime_record_json(written).empty());
  EXPECT_EQ(to_json(runtime_record_from_json(written, "again")), written);
  EXPECT_EQ(field_error("torch-eager", "conv_batchnorm_apart", "yes"),
            "p.json: /devices/0/runtimes/torch-eager/conv_batchnorm_apart: expected true or false, got string");
  json bad = doc;
  bad["conv_batchnorm_apart"] = 1;
  EXPECT_FALSE(validate_runtime_record_json(bad).empty());
}

TEST(RuntimeRecord, FusedActivationsRoundTripAndAreRefusedWhenNotNames) {
  json doc = record_fixture();
  EXPECT_TRUE(runtime_record_from_json(doc, "record.json").fused_activations.empty());  // absent
  EXPECT_FALSE(to_json(runtime_record_from_json(doc, "record.json")).contains("fused_activations"));
  doc["fuse_activations"] = true;
  doc["fused_activations"] = {"clip", "relu"};
  ASSERT_TRUE(validate_runtime_record_json(doc).empty()) << joined(validate_runtime_record_json(doc));
  const RuntimeRecord r = runtime_record_from_json(doc, "record.json");
  EXPECT_EQ(r.fused_activations, (std::vector<std::string>{"clip", "relu"}));
  const json written = to_json(r);
  EXPECT_EQ(written.at("fused_activations"), doc.at("fused_activations"));
  EXPECT_EQ(to_json(runtime_record_from_json(written, "again")), written);
  EXPECT_EQ(field_error("onnxruntime", "fused_activations", "relu"),
            "p.json: /devices/0/runtimes/onnxruntime/fused_activations: expected an array of strings");
  json bad = doc;
  bad["fused_activations"] = {"Relu!"};
  EXPECT_FALSE(validate_runtime_record_json(bad).empty());
}

TEST(RuntimeRecord, ColdCostsRoundTripAndAreRefusedWhenNegative) {
  json doc = record_fixture();
  ASSERT_FALSE(doc["kind_op_s"].empty());
  EXPECT_FALSE(runtime_record_from_json(doc, "record.json").cold_op_s);  // absent
  EXPECT_FALSE(to_json(runtime_record_from_json(doc, "record.json")).contains("cold_op_s"));
  doc["cold_op_s"] = 2.5e-5;
  doc["kind_op_s"][0]["cold_op_s"] = 4.0e-5;
  ASSERT_TRUE(validate_runtime_record_json(doc).empty()) << joined(validate_runtime_record_json(doc));
  const RuntimeRecord r = runtime_record_from_json(doc, "record.json");
  EXPECT_EQ(r.cold_op_s, 2.5e-5);
  EXPECT_EQ(r.kind_op_s[0].cold_op_s, 4.0e-5);
  const json written = to_json(r);
  EXPECT_EQ(written.at("cold_op_s"), 2.5e-5);
  EXPECT_EQ(written.at("kind_op_s")[0].at("cold_op_s"), 4.0e-5);
  EXPECT_EQ(to_json(runtime_record_from_json(written, "again")), written);
  json bad = doc;
  bad["cold_op_s"] = -1e-6;
  EXPECT_FALSE(validate_runtime_record_json(bad).empty());
  bad = doc;
  bad["kind_op_s"][0]["cold_op_s"] = "slow";
  EXPECT_FALSE(validate_runtime_record_json(bad).empty());
}

TEST(RuntimeRecord, FusionRoundTripsAndValidates) {
  json doc = record_fixture();
  doc["fusion"] = fusion_example();
  ASSERT_TRUE(validate_runtime_record_json(doc).empty()) << joined(validate_runtime_record_json(doc));
  const RuntimeRecord r = runtime_record_from_json(doc, "record.json");
  ASSERT_TRUE(r.fusion.has_value());
  EXPECT_TRUE(r.fusion->pointwise);
  EXPECT_TRUE(r.fusion->into_reductions);
  EXPECT_FALSE(r.fusion->into_products);
  EXPECT_DOUBLE_EQ(r.fusion->graph_s, 1.5e-5);
  const json written = to_json(r);
  EXPECT_EQ(written.at("fusion"), fusion_example());
  EXPECT_TRUE(validate_runtime_record_json(written).empty());
  EXPECT_EQ(to_json(runtime_record_from_json(written, "again")), written);
  // Absent or null: every op its own kernel, written as null.
  const RuntimeRecord plain = runtime_record_from_json(record_fixture(), "record.json");
  EXPECT_FALSE(plain.fusion.has_value());
  EXPECT_TRUE(to_json(plain).at("fusion").is_null());
  EXPECT_TRUE(validate_runtime_record_json(to_json(plain)).empty());
  doc["fusion"] = nullptr;
  EXPECT_FALSE(runtime_record_from_json(doc, "record.json").fusion.has_value());
}

TEST(RuntimeRecord, BadFusionIsRefusedNamingThePath) {
  const std::string at = "p.json: /devices/0/runtimes/torch-compile/fusion";
  json f = fusion_example();
  f["pointwise"] = "yes";
  EXPECT_EQ(fusion_error(f), at + "/pointwise: expected true or false, got string");
  f = fusion_example();
  f["into_products"] = 1;
  EXPECT_EQ(fusion_error(f), at + "/into_products: expected true or false, got number");
  f = fusion_example();
  f.erase("into_reductions");
  EXPECT_EQ(fusion_error(f), at + ": missing field 'into_reductions'");
  f = fusion_example();
  f["graph_s"] = -1e-6;
  EXPECT_EQ(fusion_error(f), at + "/graph_s: a time must be at least 0 s and under 1 s, got -1e-06");
  f["graph_s"] = 1e300;
  EXPECT_EQ(fusion_error(f), at + "/graph_s: a time must be at least 0 s and under 1 s, got 1e+300");
  f["graph_s"] = "15us";
  EXPECT_EQ(fusion_error(f), at + "/graph_s: expected a number, got string");
  EXPECT_EQ(fusion_error(true), at + ": expected an object or null, got boolean");
  f["graph_s"] = 0.0;
  EXPECT_EQ(fusion_error(f), "(read)");
  // The schema refuses the same.
  json doc = record_fixture();
  doc["fusion"] = fusion_example();
  doc["fusion"]["pointwise"] = "yes";
  EXPECT_TRUE(has_error(validate_runtime_record_json(doc), "/fusion", "matches none of the anyOf alternatives"));
  doc["fusion"] = fusion_example();
  doc["fusion"]["graph_s"] = 2.0;
  EXPECT_TRUE(has_error(validate_runtime_record_json(doc), "/fusion", "matches none of the anyOf alternatives"));
}

json dispatch_example() {
  return {{"impl", "_slow_conv2d_forward"}, {"max_input_elements", 20480}, {"max_batch", 1},
          {"max_window", 3}, {"window_side", "smaller"}, {"strided", true},
          {"grouped", false}, {"depthwise", false}};
}

std::string dispatch_error(const json& dispatch) {
  return field_error("torch-eager", "conv_dispatch", dispatch);
}

TEST(RuntimeRecord, ConvDispatchRoundTripsAndValidates) {
  json doc = record_fixture();
  doc["conv_dispatch"] = dispatch_example();
  const auto errors = validate_runtime_record_json(doc);
  ASSERT_TRUE(errors.empty()) << joined(errors);
  const RuntimeRecord r = runtime_record_from_json(doc, "record.json");
  EXPECT_EQ(to_json(r).at("conv_dispatch"), dispatch_example());
  ASSERT_TRUE(r.conv_dispatch.has_value());
  EXPECT_EQ(r.conv_dispatch->impl, "_slow_conv2d_forward");
  EXPECT_EQ(r.conv_dispatch->max_input_elements, 20480);
  EXPECT_EQ(r.conv_dispatch->max_window, 3);
  EXPECT_TRUE(r.conv_dispatch->window_smaller_side);
  EXPECT_TRUE(r.conv_dispatch->strided);
  EXPECT_FALSE(r.conv_dispatch->grouped);
  EXPECT_FALSE(r.conv_dispatch->op_s.has_value());  // before 1.16: absent, and written so
  EXPECT_FALSE(to_json(r).at("conv_dispatch").contains("others_op_s"));
  EXPECT_EQ(to_json(runtime_record_from_json(to_json(r), "again")), to_json(r));
  // The paths' per-call costs (since 1.16).
  json costed = doc;
  costed["conv_dispatch"]["op_s"] = 9e-6;
  costed["conv_dispatch"]["others_op_s"] = 8.5e-5;
  ASSERT_TRUE(validate_runtime_record_json(costed).empty());
  const RuntimeRecord c = runtime_record_from_json(costed, "record.json");
  EXPECT_DOUBLE_EQ(c.conv_dispatch->op_s.value_or(0), 9e-6);
  EXPECT_DOUBLE_EQ(c.conv_dispatch->others_op_s.value_or(0), 8.5e-5);
  EXPECT_EQ(to_json(c).at("conv_dispatch"), costed["conv_dispatch"]);
  // No element bound: null, kept as null.
  doc["conv_dispatch"]["max_input_elements"] = nullptr;
  const RuntimeRecord unbounded = runtime_record_from_json(doc, "record.json");
  EXPECT_FALSE(unbounded.conv_dispatch->max_input_elements.has_value());
  EXPECT_TRUE(to_json(unbounded).at("conv_dispatch").at("max_input_elements").is_null());
  EXPECT_TRUE(validate_runtime_record_json(to_json(unbounded)).empty());
  // Absent: one implementation, written as null.
  const RuntimeRecord plain = runtime_record_from_json(record_fixture(), "record.json");
  EXPECT_FALSE(plain.conv_dispatch.has_value());
  EXPECT_TRUE(to_json(plain).at("conv_dispatch").is_null());
  EXPECT_TRUE(validate_runtime_record_json(to_json(plain)).empty());
}

TEST(RuntimeRecord, BadConvDispatchIsRefusedNamingThePath) {
  const std::string at = "p.json: /devices/0/runtimes/torch-eager/conv_dispatch";
  json d = dispatch_example();
  d["max_batch"] = 0;
  EXPECT_EQ(dispatch_error(d), at + "/max_batch: expected at least 1, got 0");
  d = dispatch_example();
  d["max_input_elements"] = -5;
  EXPECT_EQ(dispatch_error(d), at + "/max_input_elements: expected at least 1, got -5");
  d = dispatch_example();
  d["window_side"] = "both";
  EXPECT_EQ(dispatch_error(d), at + "/window_side: expected \"larger\" or \"smaller\", got \"both\"");
  d = dispatch_example();
  d["impl"] = "";
  EXPECT_EQ(dispatch_error(d), at + "/impl: an implementation name must not be empty");
  d = dispatch_example();
  d.erase("depthwise");
  EXPECT_EQ(dispatch_error(d), at + ": missing field 'depthwise'");
  d = dispatch_example();
  d.erase("max_input_elements");  // null says "no bound"; absent says nothing
  EXPECT_EQ(dispatch_error(d), at + ": missing field 'max_input_elements'");
  d = dispatch_example();
  d["others_op_s"] = -1e-6;
  EXPECT_EQ(dispatch_error(d), at + "/others_op_s: a time must be at least 0 s and under 1 s, got -1e-06");
  d = dispatch_example();
  d["op_s"] = "9us";
  EXPECT_EQ(dispatch_error(d), at + "/op_s: expected a number or null, got string");
  EXPECT_EQ(dispatch_error(json::array()), at + ": expected an object or null, got array");
  EXPECT_EQ(dispatch_error(dispatch_example()), "(read)");
  // The schema refuses the same.
  json doc = record_fixture();
  doc["conv_dispatch"] = dispatch_example();
  doc["conv_dispatch"]["max_window"] = 0;
  EXPECT_TRUE(has_error(validate_runtime_record_json(doc), "/conv_dispatch",
                        "matches none of the anyOf alternatives"));
}

TEST(RuntimeRecord, ProfileOfSchemaOneTwelveWithoutFusionReads) {
  const Profile p =
      read_profile((fs::path(TRUEPEAK_TEST_DATA_DIR) / "runtimes" / "profile_with_runtime.json").string());
  EXPECT_EQ(p.schema_version, "1.12");
  ASSERT_EQ(p.devices[0].runtimes.count("torch-jit"), 1u);
  EXPECT_FALSE(p.devices[0].runtimes.at("torch-jit").fusion.has_value());
}

}  // namespace
}  // namespace truepeak
