#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/profile.hpp"

namespace truepeak {
namespace {

namespace fs = std::filesystem;

class ProfileIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("truepeak_profile_io_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const auto p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  static Profile small_profile() {
    Profile p;
    p.tool.version = "0.1.0";
    p.created_utc = "2026-11-30T10:00:00Z";
    p.complete = true;
    p.machine.label = "box";
    Device d;
    d.id = "cpu";
    d.kind = "cpu";
    d.name = "test cpu";
    d.gemm.push_back({GemmShape{DType::f32, 64, 64, 64, 1}, {1e-5, 2e-5, 0.1, 10}, 2.0 * 64 * 64 * 64 / 1e-5, "x", "row-major"});
    d.gemm.push_back({GemmShape{DType::f32, 1, 64, 64, 1}, {1e-6, 1e-6, 0.1, 10}, 2.0 * 64 * 64 / 1e-6, "x",
                      "row-major, cold weights", true});
    const ConvShape conv = ConvShape::parse("f32_mb1ic16ih8oc16kh3ph1");
    d.conv.push_back({conv, "blocked", {1e-5, 1e-5, 0.1, 10}, conv.flops() / 1e-5, "x"});
    d.conv.push_back({conv, "blocked", {2e-5, 2e-5, 0.1, 10}, conv.flops() / 2e-5, "x", true});
    d.transfers["h2d_pinned"] = TransferFit{1e-6, 5e10, {{4096, 2e-6}}};
    d.overhead_op_s = 2e-6;
    p.devices.push_back(d);
    return p;
  }
  fs::path dir_;
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST_F(ProfileIo, WriteThenReadKeepsValues) {
  const auto path = (dir_ / "p.json").string();
  write_profile(path, small_profile());
  const auto back = read_profile(path);
  ASSERT_EQ(back.devices.size(), 1u);
  const auto& d = back.devices[0];
  EXPECT_EQ(d.gemm[0].shape, (GemmShape{DType::f32, 64, 64, 64, 1}));
  EXPECT_DOUBLE_EQ(d.gemm[0].timing.median_s, 2e-5);
  EXPECT_EQ(d.gemm[0].impl, "x");
  EXPECT_FALSE(d.gemm[0].cold_weights);
  EXPECT_TRUE(d.gemm[1].cold_weights);
  ASSERT_EQ(d.conv.size(), 2u);
  EXPECT_FALSE(d.conv[0].cold_weights);
  EXPECT_TRUE(d.conv[1].cold_weights);
  EXPECT_DOUBLE_EQ(*d.transfers.at("h2d_pinned").Bps, 5e10);
  EXPECT_DOUBLE_EQ(*d.overhead_op_s, 2e-6);
  EXPECT_FALSE(d.overhead_graph_op_s.has_value());
  EXPECT_TRUE(back.complete);
  EXPECT_NE(back.find_device("cpu"), nullptr);
  EXPECT_EQ(back.find_device("cuda:0"), nullptr);
}

TEST_F(ProfileIo, NumbersStayNumbersAndMissingIsNull) {
  const auto j = to_json(small_profile());
  EXPECT_TRUE(j["devices"][0]["gemm"][0]["flops_per_s"].is_number());
  EXPECT_TRUE(j["devices"][0]["overhead"]["graph_op_s"].is_null());
  EXPECT_TRUE(j["machine"]["price_per_hour_usd"].is_null());
  EXPECT_EQ(j["schema_version"], "1.19");
  EXPECT_EQ(j["devices"][0]["gemm"][1]["cold_weights"], true);
  EXPECT_EQ(j["devices"][0]["conv"][1]["cold_weights"], true);
}

TEST_F(ProfileIo, TypicalTimeIsWrittenWhereMeasuredAndMustBePositive) {
  auto profile = small_profile();
  profile.devices[0].gemm[0].timing.typical_s = 1.5e-5;
  const auto j = to_json(profile);
  EXPECT_DOUBLE_EQ(j["devices"][0]["gemm"][0]["typical_s"], 1.5e-5);
  EXPECT_FALSE(j["devices"][0]["gemm"][1].contains("typical_s"));  // not recorded: absent
  const auto path = write("typical.json", j.dump());
  const auto back = read_profile(path);
  EXPECT_DOUBLE_EQ(back.devices[0].gemm[0].timing.typical_s, 1.5e-5);
  EXPECT_DOUBLE_EQ(back.devices[0].gemm[1].timing.typical_s, 0);
  auto bad = j;
  bad["devices"][0]["conv"][0]["typical_s"] = -1;
  const auto bad_path = write("bad_typical.json", bad.dump());
  EXPECT_NE(message_of([&] { read_profile(bad_path); }).find("/devices/0/conv/0/typical_s: expected a positive time"),
            std::string::npos);
}

TEST_F(ProfileIo, UnreadableFileSaysWhereAndWhy) {
  const auto missing = (dir_ / "nope.json").string();
  EXPECT_NE(message_of([&] { read_profile(missing); }).find("nope.json: cannot read profile"), std::string::npos);
}

TEST_F(ProfileIo, MalformedJsonIsAnInputError) {
  const auto path = write("bad.json", "{\"schema_version\": \"1.0\", ");
  EXPECT_NE(message_of([&] { read_profile(path); }).find("not valid JSON"), std::string::npos);
}

TEST_F(ProfileIo, MistypedFieldNamesItsPath) {
  auto j = to_json(small_profile());
  j["devices"][0]["gemm"][0]["flops_per_s"] = "N/A";
  const auto path = write("typed.json", j.dump());
  EXPECT_NE(message_of([&] { read_profile(path); }).find("/devices/0/gemm/0/flops_per_s: expected a number, got string"),
            std::string::npos);
}

TEST_F(ProfileIo, OtherMajorVersionIsRejected) {
  auto j = to_json(small_profile());
  j["schema_version"] = "2.0";
  const auto msg = message_of([&] { profile_from_json(j, "x.json"); });
  EXPECT_NE(msg.find("schema version 2.0 is not supported"), std::string::npos) << msg;
  j["schema_version"] = "1.99";  // a newer minor with fields this reader does not know
  j["devices"][0]["future_field"] = 1;
  EXPECT_NO_THROW(profile_from_json(j, "x.json"));
}

TEST_F(ProfileIo, AtomicWriteLeavesNoFileWhenDirectoryIsMissing) {
  const auto path = (dir_ / "no_such_dir" / "p.json").string();
  EXPECT_THROW(write_profile(path, small_profile()), InputError);
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(ProfileIo, AtomicWriteReplacesWholeFileAndLeavesNoTemp) {
  const auto path = write("p.json", "old");
  write_file_atomic(path, "new contents");
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "new contents");
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1);
}

}  // namespace
}  // namespace truepeak
