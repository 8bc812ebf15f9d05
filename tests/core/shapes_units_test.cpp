#include <gtest/gtest.h>

#include <cmath>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/shapes.hpp"
#include "core/units.hpp"

namespace truepeak {
namespace {

TEST(GemmShapeTest, NamePrintsAndParses) {
  const GemmShape s{DType::bf16, 64, 4096, 1024, 2};
  EXPECT_EQ(s.str(), "bf16_b2m64n4096k1024");
  EXPECT_EQ(GemmShape::parse(s.str()), s);
  EXPECT_EQ(GemmShape::parse("f32_m8n16k32").batch, 1);
}

TEST(GemmShapeTest, WorkIsDeclaredOnce) {
  const GemmShape s{DType::f32, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(s.flops(), 2.0 * 5 * 2 * 3 * 4);
  EXPECT_DOUBLE_EQ(s.bytes(), 5.0 * (2 * 4 + 4 * 3 + 2 * 3) * 4);
  const GemmShape i8{DType::int8, 2, 3, 4, 1};
  EXPECT_DOUBLE_EQ(i8.bytes(), (2 * 4 + 4 * 3) * 1.0 + 2 * 3 * 4.0);  // s32 output
}

TEST(GemmShapeTest, BadNamesAreInputErrors) {
  EXPECT_THROW(GemmShape::parse("m8n8k8"), InputError);
  EXPECT_THROW(GemmShape::parse("f33_m8n8k8"), InputError);
  EXPECT_THROW(GemmShape::parse("f32_m8n8"), InputError);
  EXPECT_THROW(GemmShape::parse("f32_m8n8k8x1"), InputError);
  EXPECT_THROW(GemmShape::parse("f32_m0n8k8"), InputError);
  EXPECT_THROW(GemmShape::parse("f32_m8m8n8k8"), InputError);
}

TEST(VectorOpShapeTest, BytesCountTheInputsAndTheOutput) {
  // 256 x 1024 elements: a relu reads one f32 tensor and writes one, an add reads two.
  EXPECT_DOUBLE_EQ((VectorOpShape{"relu", DType::f32, 256, 1024}.bytes()), 2.0 * 256 * 1024 * 4);
  EXPECT_DOUBLE_EQ((VectorOpShape{"add", DType::f32, 256, 1024}.bytes()), 3.0 * 256 * 1024 * 4);
  EXPECT_DOUBLE_EQ((VectorOpShape{"add_padded", DType::bf16, 24, 10240}.bytes()), 3.0 * 24 * 10240 * 2);
  EXPECT_DOUBLE_EQ((VectorOpShape{"reorder_plain", DType::bf16, 256, 1024}.bytes()), 2.0 * 256 * 1024 * 2);
}

TEST(ConvShapeTest, NamePrintsAndParses) {
  ConvShape s;
  s.dtype = DType::f32;
  s.n = 8;
  s.c = 64;
  s.h = s.w = 56;
  s.k = 128;
  s.r = s.s = 3;
  s.stride = 2;
  s.pad = 1;
  EXPECT_EQ(s.str(), "f32_g1mb8ic64ih56iw56oc128kh3kw3sh2ph1dh1");
  EXPECT_EQ(ConvShape::parse(s.str()), s);
  EXPECT_EQ(s.out_h(), 28);
  EXPECT_EQ(ConvShape::parse("bf16_mb1ic3ih224oc64kh7sh2ph3").out_w(), 112);
}

TEST(ConvShapeTest, FlopsCountGroupsAndDilation) {
  // ResNet-50 stem: 118 M multiply-adds at batch 1.
  const auto stem = ConvShape::parse("f32_mb1ic3ih224oc64kh7sh2ph3");
  EXPECT_DOUBLE_EQ(stem.flops(), 2.0 * 64 * 112 * 112 * 3 * 7 * 7);
  // Depthwise: each output channel sees one input channel.
  const auto dw = ConvShape::parse("f32_g32mb1ic32ih112oc32kh3ph1");
  EXPECT_DOUBLE_EQ(dw.flops(), 2.0 * 32 * 112 * 112 * 1 * 9);
  const auto dil = ConvShape::parse("f32_mb1ic8ih32oc8kh3ph2dh2");
  EXPECT_EQ(dil.out_h(), 32);
}

TEST(ConvShapeTest, InsideTapShareLeavesOutThePadding) {
  // 7x7, 3x3, pad 1: per dimension 19 of the 21 taps fall on the input.
  EXPECT_DOUBLE_EQ(ConvShape::parse("f32_mb1ic512ih7oc512kh3ph1").inside_tap_share(), (19.0 / 21) * (19.0 / 21));
  EXPECT_DOUBLE_EQ(ConvShape::parse("f32_mb1ic64ih56oc64kh1").inside_tap_share(), 1.0);
  // Stride 2, pad 3, 7x7 over 224: of 112 x 7 taps per dimension, 3 + 1 at the top edge (outputs
  // 0 and 1) and 2 at the bottom (output 111) fall on the padding.
  EXPECT_DOUBLE_EQ(ConvShape::parse("f32_mb1ic3ih224oc64kh7sh2ph3").inside_tap_share(),
                   std::pow((112.0 * 7 - 6) / (112 * 7), 2));
}

TEST(ConvShapeTest, BadShapesAreInputErrors) {
  EXPECT_THROW(ConvShape::parse("f32_g3mb1ic64ih56oc64kh3"), InputError);  // 64 % 3
  EXPECT_THROW(ConvShape::parse("f32_mb1ic64ih2oc64kh7"), InputError);     // empty output
  EXPECT_THROW(ConvShape::parse("f32_mb1ih56oc64kh3"), InputError);        // no ic
}

TEST(DTypeTest, NamesRoundTripAndAliases) {
  for (auto d : {DType::f64, DType::f32, DType::tf32, DType::f16, DType::bf16, DType::fp8_e4m3, DType::int8}) {
    EXPECT_EQ(parse_dtype(to_string(d)), d);
  }
  EXPECT_EQ(parse_dtype("FP16"), DType::f16);
  EXPECT_EQ(parse_dtype("float32"), DType::f32);
  EXPECT_EQ(parse_dtype("s8"), DType::int8);
  EXPECT_FALSE(parse_dtype("f12").has_value());
  EXPECT_EQ(dtype_bytes(DType::bf16), 2);
  EXPECT_EQ(dtype_bytes(DType::tf32), 4);
}

TEST(UnitsTest, DecimalRatesAndBinarySizes) {
  EXPECT_EQ(format_flops_per_s(1.5e12), "1.5 TFLOP/s");
  EXPECT_EQ(format_flops_per_s(215e9), "215 GFLOP/s");
  EXPECT_EQ(format_Bps(3.9e12), "3.9 TB/s");
  EXPECT_EQ(format_Bps(12.3e9), "12.3 GB/s");
  EXPECT_EQ(format_bytes(48 * 1024), "48 KiB");
  EXPECT_EQ(format_bytes(1.5 * 1024 * 1024 * 1024), "1.5 GiB");
  EXPECT_EQ(format_time_s(2.5e-6), "2.5 us");
  EXPECT_EQ(format_time_s(0.0123), "12.3 ms");
  EXPECT_EQ(format_percent(0.8123), "81.2%");
}

TEST(UnitsTest, ParseBytes) {
  EXPECT_EQ(parse_bytes("4096"), 4096);
  EXPECT_EQ(parse_bytes("48K"), 48 * 1024);
  EXPECT_EQ(parse_bytes("2MiB"), 2 * kMiB);
  EXPECT_EQ(parse_bytes("1g"), kGiB);
  EXPECT_THROW(parse_bytes("12X"), InputError);
  EXPECT_THROW(parse_bytes("abc"), InputError);
  EXPECT_THROW(parse_bytes("-1K"), InputError);
}

}  // namespace
}  // namespace truepeak
