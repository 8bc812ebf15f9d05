// Bad model files get one clear line naming the file, the op and the field.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "estimate/estimator.hpp"

namespace truepeak::estimate {
namespace {

std::string error_of(const std::string& text) {
  try {
    model_from_json_text(text, "bad.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kHead =
    R"({"format": "truepeak-model", "version": 1, "name": "t", "inputs": [{"name": "x", "shape": ["N", 3, 32, 32]}], "ops": [)";

TEST(ModelFile, GoodGraphLoads) {
  const Model m = model_from_json_text(
      std::string(kHead) +
          R"({"name": "c", "op": "conv2d", "in": ["x"], "kernel": 3, "pad": 1, "shape": ["N", 8, 32, 32]},
                              {"name": "r", "op": "relu", "in": ["c"]}]})",
      "good.json");
  ASSERT_EQ(m.forward.ops.size(), 2u);
  EXPECT_EQ(shape_str(m.forward.ops[1].output.shape), "[N,8,32,32]");
}

TEST(ModelFile, WrongShapeNamesOpAndField) {
  const auto e = error_of(
      std::string(kHead) +
      R"({"name": "c1", "op": "conv2d", "in": ["x"], "kernel": 3, "stride": 2, "shape": ["N", 8, 32, 32]}]})");
  EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
  EXPECT_NE(e.find("op 'c1'"), std::string::npos) << e;
  EXPECT_NE(e.find("field 'shape'"), std::string::npos) << e;
  EXPECT_NE(e.find("[N,8,15,15]"), std::string::npos) << e;
}

TEST(ModelFile, UnknownInputTensor) {
  const auto e = error_of(std::string(kHead) + R"({"name": "r", "op": "relu", "in": ["y"]}]})");
  EXPECT_NE(e.find("op 'r'"), std::string::npos) << e;
  EXPECT_NE(e.find("field 'in'"), std::string::npos) << e;
  EXPECT_NE(e.find("'y'"), std::string::npos) << e;
}

TEST(ModelFile, UnknownOpAndField) {
  EXPECT_NE(error_of(std::string(kHead) + R"({"name": "r", "op": "frobnicate", "in": ["x"]}]})")
                .find("unknown op 'frobnicate'"),
            std::string::npos);
  EXPECT_NE(
      error_of(
          std::string(kHead) +
          R"({"name": "c", "op": "conv2d", "in": ["x"], "strid": 2, "shape": ["N", 8, 30, 30]}]})")
          .find("field 'strid': unknown field"),
      std::string::npos);
}

TEST(ModelFile, BadGroupsAndDims) {
  EXPECT_NE(
      error_of(std::string(kHead) +
               R"({"name": "c", "op": "conv2d", "in": ["x"], "groups": 2, "out_channels": 8}]})")
          .find("groups 2"),
      std::string::npos);
  EXPECT_NE(error_of(std::string(kHead) +
                     R"({"name": "c", "op": "linear", "in": ["x"], "out_features": -3}]})")
                .find("field 'out_features'"),
            std::string::npos);
}

TEST(ModelFile, NotJsonOrWrongFormat) {
  EXPECT_NE(error_of("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"format": "onnx"})").find("field 'format'"), std::string::npos);
  EXPECT_NE(
      error_of(R"({"format": "truepeak-model", "version": 2, "name": "t"})").find("version 2"),
      std::string::npos);
}

TEST(ModelFile, SymbolWithoutDefault) {
  const auto e = error_of(
      R"({"format": "truepeak-model", "name": "t", "inputs": [{"name": "x", "shape": ["N", "L", 8]}],
                              "ops": [{"name": "r", "op": "relu", "in": ["x"]}]})");
  EXPECT_NE(e.find("symbol 'L'"), std::string::npos) << e;
}

TEST(ModelFile, TransformerShorthandErrorsNameTheField) {
  const auto e = error_of(
      R"({"format": "truepeak-model", "name": "t", "transformer": {"architecture": "decoder",
                              "layers": 2, "hidden": 100, "heads": 3, "vocab": 10, "seq_len": 8}})");
  EXPECT_NE(e.find("field 'heads'"), std::string::npos) << e;
  const auto e2 = error_of(
      R"({"format": "truepeak-model", "name": "t", "transformer": {"architecture": "decoder",
                               "layers": 2, "hidden": 64, "heads": 4, "vocab": 10, "seq_len": 8, "norm": "groupnorm"}})");
  EXPECT_NE(e2.find("field 'norm'"), std::string::npos) << e2;
}

TEST(ModelFile, MissingFileOrUnknownName) {
  EXPECT_THROW(load_model("no_such_model"), InputError);
  EXPECT_THROW(load_model("/nonexistent/model.json"), InputError);
}

}  // namespace
}  // namespace truepeak::estimate
