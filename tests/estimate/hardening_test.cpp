// Malformed and hostile inputs: each is refused as bad input (InputError, exit 2 at the command
// line), or estimated to finite figures; none crashes, and no non-finite figure leaves the
// estimator. The files are tests/data/hardening/ (make_fixtures.py), each an input that once
// crashed truepeak or passed an absurd figure as a result.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "core/read_file.hpp"
#include "core/shapes.hpp"
#include "estimate/estimator.hpp"
#include "helpers.hpp"
#ifdef TRUEPEAK_HAVE_ONNX
#include "estimate/onnx_import.hpp"
#endif

namespace truepeak::estimate {
namespace {

std::string hardening(const std::string& name) {
  return std::string(TRUEPEAK_SOURCE_DIR) + "/tests/data/hardening/" + name;
}

std::string text_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const Device& cpu() {
  static const Profile profile = testing::fixture("fixture_cpu.json");
  return profile.devices.front();
}

// The message of the InputError `body` throws; fails the test when it throws none or another.
template <typename Body>
std::string input_error(Body&& body) {
  try {
    body();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an input error: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no error";
  return {};
}

void expect_finite(const Estimate& e) {
  EXPECT_TRUE(std::isfinite(e.latency_s) && e.latency_s > 0) << e.latency_s;
  EXPECT_TRUE(std::isfinite(e.naive_latency_s) && e.naive_latency_s >= 0) << e.naive_latency_s;
  EXPECT_TRUE(std::isfinite(e.throughput_per_s) && e.throughput_per_s > 0) << e.throughput_per_s;
  EXPECT_TRUE(std::isfinite(e.memory.total_bytes) && e.memory.total_bytes >= 0);
  for (const auto& row : e.ops) EXPECT_TRUE(std::isfinite(row.time_s) && row.time_s >= 0) << row.name;
}

TEST(Hardening, CheckedArithmeticRefusesOverflow) {
  EXPECT_EQ(checked_mul(std::int64_t{1} << 31, std::int64_t{1} << 31), std::int64_t{1} << 62);
  EXPECT_FALSE(checked_mul(std::int64_t{1} << 32, std::int64_t{1} << 31));
  EXPECT_FALSE(checked_add(std::numeric_limits<std::int64_t>::max(), 1));
  EXPECT_THROW(mul_or_throw(std::int64_t{3037000500}, std::int64_t{3037000500}, "x"), OverflowError);
  EXPECT_THROW(Dim::parse("4294967296*4294967296"), InputError);
  EXPECT_THROW(Dim::parse("99999999999999999999"), InputError);
  EXPECT_THROW(Dim::parse("0*N"), InputError);
  EXPECT_THROW(num_elements({Dim::symbol("N"), std::int64_t{1} << 40}, {{"N", std::int64_t{1} << 30}}),
               OverflowError);
}

// A profile's convolution points reach ConvShape unchecked: every figure of a malformed one is
// an answer, not a division by zero or a loop over a billion positions.
TEST(Hardening, ConvShapeArithmeticIsTotal) {
  ConvShape bad;
  bad.c = 64, bad.h = 56, bad.w = 56, bad.k = 64, bad.r = 3, bad.s = 3, bad.pad = 1;
  for (const auto& [stride, groups] : {std::pair{0, 1}, std::pair{1, 0}, std::pair{-1, -2}}) {
    bad.stride = stride;
    bad.groups = groups;
    EXPECT_TRUE(std::isfinite(bad.flops()) && std::isfinite(bad.bytes()) && std::isfinite(bad.inside_tap_share()));
  }
  ConvShape huge = bad;
  huge.stride = 1, huge.groups = 1, huge.h = huge.w = std::int64_t{1} << 40;
  EXPECT_NEAR(huge.inside_tap_share(), 1.0, 1e-9);
  EXPECT_THROW(ConvShape::parse("f32_g1mb1ic64ih99999999999999999999oc64kh3"), InputError);
  EXPECT_THROW(GemmShape::parse("f32_m99999999999999999999n1k1"), InputError);
  // The interval count is the direct count, output position by position, of taps on the input.
  const auto direct = [](const ConvShape& c, std::int64_t in, std::int64_t out, std::int64_t taps) {
    std::int64_t inside = 0;
    for (std::int64_t o = 0; o < out; ++o)
      for (std::int64_t t = 0; t < taps; ++t) {
        const std::int64_t x = o * c.stride - c.pad + t * c.dilation;
        inside += x >= 0 && x < in;
      }
    return double(inside) / double(out * taps);
  };
  for (std::int64_t in = 1; in <= 9; ++in)
    for (std::int64_t taps = 1; taps <= 5; ++taps)
      for (std::int64_t stride = 1; stride <= 3; ++stride)
        for (std::int64_t pad = 0; pad <= 3; ++pad)
          for (std::int64_t dilation = 1; dilation <= 2; ++dilation) {
            ConvShape c;
            c.c = c.k = 1, c.h = in, c.w = in + 2, c.r = taps, c.s = 1;
            c.stride = stride, c.pad = pad, c.dilation = dilation;
            if (c.out_h() < 1 || c.out_w() < 1) continue;
            EXPECT_NEAR(c.inside_tap_share(),
                        direct(c, c.h, c.out_h(), c.r) * direct(c, c.w, c.out_w(), c.s), 1e-12)
                << c.str();
          }
}

TEST(Hardening, ModelFilesThatOnceCrashedAreOneInputError) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"maxpool_stride0.json", "stride 0"},
      {"maxpool_pad_negative.json", "pad -3"},
      {"conv_kernel0.json", "kernel"},
      {"huge_product.json", "overflows 64 bits"},
      {"huge_symbolic.json", "overflows 64 bits"},
      {"transformer_heads0.json", "field 'heads': must be positive"},
      {"number_overflow.json", "not valid JSON"},
  };
  for (const auto& [file, message] : cases) {
    const auto what = input_error([&] {
      const auto model = model_from_json_text(text_of(hardening(file)), file);
      estimate(model, cpu(), {});
    });
    EXPECT_NE(what.find(message), std::string::npos) << file << ": " << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(Hardening, ADimensionNear2To63IsAnOverflowNamingTheOp) {
  const auto model = model_from_json_text(text_of(hardening("huge_dim.json")), "huge_dim.json");
  const auto what = input_error([&] { estimate(model, cpu(), {}); });
  EXPECT_NE(what.find("op 'fc'"), std::string::npos) << what;
  EXPECT_NE(what.find("overflows 64 bits"), std::string::npos) << what;
}

TEST(Hardening, AHugeBatchIsAnOverflowNotAWrappedNumber) {
  const auto model = load_model("resnet18");
  Options options;
  options.batch = 1'000'000'000'000'000'000;
  const auto what = input_error([&] { estimate(model, cpu(), options); });
  EXPECT_NE(what.find("input 'image': the element count of [N,3,224,224] = [1000000000000000000,3,224,224] "
                      "overflows 64 bits"),
            std::string::npos)
      << what;
  // The largest batch that fits stops where sizes overflow: they fit no memory.
  const auto fits = max_batch(model, {}, 1e300);
  ASSERT_TRUE(fits.has_value());
  EXPECT_GT(*fits, 0);
}

TEST(Hardening, AnUnknownElementwiseFunctionIsAWarning) {
  const auto model = model_from_json_text(text_of(hardening("unknown_fn.json")), "unknown_fn.json");
  ASSERT_EQ(model.warnings.size(), 1u);
  EXPECT_NE(model.warnings[0].find("'frobnicate'"), std::string::npos) << model.warnings[0];
  expect_finite(estimate(model, cpu(), {}));
  EXPECT_TRUE(model_from_json_text(text_of(std::string(TRUEPEAK_SOURCE_DIR) + "/models/resnet18.json"), "r")
                  .warnings.empty());
}

// Graphs of one op whose attributes are each wrong in one way: every one is refused, or estimated
// to finite figures.
TEST(Hardening, MalformedWindowsAreRefusedOrFinite) {
  const std::vector<std::string> ops = {
      R"({"name": "p", "op": "maxpool", "in": ["x"], "kernel": 2, "stride": 0})",
      R"({"name": "p", "op": "maxpool", "in": ["x"], "kernel": 2, "stride": -1})",
      R"({"name": "p", "op": "maxpool", "in": ["x"], "kernel": 99})",
      R"({"name": "p", "op": "maxpool", "in": ["x"], "kernel": [0, 3]})",
      R"({"name": "p", "op": "maxpool", "in": ["x"], "kernel": 2, "pad": 9223372036854775807})",
      R"({"name": "p", "op": "avgpool", "in": ["x"], "kernel": 9223372036854775807})",
      R"({"name": "p", "op": "global_avgpool", "in": ["x"]})",
      R"({"name": "c", "op": "conv", "in": ["x"], "out_channels": 4, "kernel": 3, "groups": 0})",
      R"({"name": "c", "op": "conv", "in": ["x"], "out_channels": 4, "kernel": 3, "dilation": 4611686018427387904})",
      R"({"name": "c", "op": "conv", "in": ["x"], "out_channels": 4, "kernel": 3, "stride": 9223372036854775807})",
      R"({"name": "c", "op": "conv", "in": ["x"], "out_channels": 4, "kernel": -3})",
      R"({"name": "c", "op": "conv", "in": ["x"], "out_channels": 9223372036854775807, "kernel": 1})",
      R"({"name": "f", "op": "flatten", "in": ["x"], "shape": ["N", 48]})",
      R"({"name": "l", "op": "linear", "in": ["x"], "out_features": 4611686018427387904})",
      R"({"name": "t", "op": "permute", "in": ["x"], "perm": [0, 1, 2, 4294967299]})",
      R"({"name": "k", "op": "cat", "in": ["x", "x"], "axis": -2147483648})",
  };
  for (const auto& op : ops) {
    const std::string doc = R"({"format": "truepeak-model", "name": "m",
        "inputs": [{"name": "x", "shape": ["N", 3, 4, 4]}], "ops": [)" + op + "]}";
    for (const auto mode : {Mode::inference, Mode::training}) {
      try {
        const auto model = model_from_json_text(doc, "m.json");
        Options options;
        options.mode = mode;
        options.batch = 2;
        expect_finite(estimate(model, cpu(), options));
      } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << op << ": not an input error: " << e.what();
      }
    }
  }
}

TEST(Hardening, ANonFiniteFigureIsAnInternalErrorNamingTheOp) {
  // A rate of 0 for the runtime's own kernels makes a relu take forever: that must not pass as a
  // result. (The command line refuses such a rate; the estimator stops it too.)
  Options options;
  options.own_rates = {{"elementwise:relu", 0.0}};
  try {
    estimate(load_model("resnet18"), cpu(), options);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    ADD_FAILURE() << "an input error: " << e.what();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("internal error: op '"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("elementwise:relu"), std::string::npos) << e.what();
  }
}

#ifdef TRUEPEAK_HAVE_ONNX
TEST(Hardening, OnnxFilesThatOnceCrashedAreOneInputError) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"conv_strides0.onnx", "strides 0,0: each must be 1 or more"},
      {"conv_same_strides0.onnx", "strides 0,0"},
      {"maxpool_strides0.onnx", "strides 0,0"},
      {"avgpool_strides0_same.onnx", "strides 0,0"},
      {"conv_kernel_too_big.onnx", "window of 9 (dilation 1) on spatial axis 0 is larger than the input's 4"},
      {"conv_pads_negative.onnx", "pads -5,-5,-5,-5: each must be 0 or more"},
      {"conv_strides_negative.onnx", "strides -1,-1"},
      {"conv_group0.onnx", "group 0: each must be 1 or more"},
      {"conv_group_mismatch.onnx", "group 3"},
      {"conv_dilations0.onnx", "dilations 0,0"},
      {"conv_input_rank2.onnx", "its input 'x' has 2 dimension(s)"},
      {"conv_qdq_input_rank2.onnx", "its input 'x' has 2 dimension(s)"},
      {"conv_unknown_op_input_rank2.onnx", "its input 'x' has 2 dimension(s)"},
      {"conv_constant_input_rank2.onnx", "its input 'x' has 2 dimension(s)"},
      {"maxpool_kernel0.onnx", "kernel_shape 0,0"},
      {"maxpool_no_kernel.onnx", "pool"},
      {"matmul_negative_dim.onnx", "negative dimension (-64)"},
      {"matmul_huge.onnx", "overflows 64 bits"},
  };
  for (const auto& [file, message] : cases) {
    const auto what = input_error([&] {
      OnnxOptions o;
      o.batch = 1;
      const auto imported = load_onnx(hardening(file), o);
      estimate(imported.model, cpu(), {});
    });
    EXPECT_NE(what.find(message), std::string::npos) << file << ": " << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}
#endif

TEST(Hardening, InputFilesHaveASizeLimit) {
  const auto zero = input_error([] { read_input_file("/dev/zero", 1 << 20, "profile"); });
  EXPECT_NE(zero.find("/dev/zero: larger than 1 MiB, the most a profile file may be"), std::string::npos) << zero;
  const auto dir = input_error([] { read_input_file("/", kMaxProfileBytes, "profile"); });
  EXPECT_NE(dir.find("it is a directory"), std::string::npos) << dir;
  const auto missing = input_error([] { read_input_file("/nonexistent/p.json", kMaxProfileBytes, "profile"); });
  EXPECT_NE(missing.find("cannot read profile: No such file"), std::string::npos) << missing;
  const auto big = input_error([] { read_input_file(hardening("make_fixtures.py"), 100, "model"); });
  EXPECT_NE(big.find("larger than 100 bytes"), std::string::npos) << big;
  const auto json = input_error([] { read_json_file(hardening("make_fixtures.py"), kMaxModelBytes, "model"); });
  EXPECT_NE(json.find("not valid JSON (byte "), std::string::npos) << json;
  const auto number = input_error([] { read_json_file(hardening("profile_number_overflow.json"), kMaxProfileBytes, "profile"); });
  EXPECT_NE(number.find("not valid JSON"), std::string::npos) << number;
}

TEST(Hardening, OutputsAreRegularFilesOrStandardOutput) {
  EXPECT_NO_THROW(check_output_path("-", "-o"));
  const auto device = input_error([] { check_output_path("/dev/null", "-o"); });
  EXPECT_NE(device.find("-o /dev/null: not a regular file"), std::string::npos) << device;
  const auto dir = input_error([] { check_output_path("/tmp", "-o"); });
  EXPECT_NE(dir.find("-o /tmp: is a directory"), std::string::npos) << dir;
  const auto slash = input_error([] { check_output_path("/tmp/nowhere/", "-o"); });
  EXPECT_NE(slash.find("is a directory"), std::string::npos) << slash;
  const auto missing = input_error([] { check_output_path("/nonexistent/r.html", "-o"); });
  EXPECT_NE(missing.find("directory '/nonexistent' does not exist"), std::string::npos) << missing;
  const auto path = (std::filesystem::temp_directory_path() / ("truepeak_out_" + std::to_string(::getpid()))).string();
  write_output(path, "one\n", "-o");
  write_output(path, "two\n", "-o");
  EXPECT_EQ(text_of(path), "two\n");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace truepeak::estimate
