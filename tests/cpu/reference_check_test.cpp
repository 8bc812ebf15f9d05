// The checkers must catch a wrong result: each test computes a correct output, shows that it
// passes, then corrupts one element (or uses a mis-sized reference) and expects CheckFailed.
#include "kernels/cpu/reference_check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "kernels/cpu/own_kernels.hpp"
#include "kernels/cpu/random_fill.hpp"

namespace truepeak::cpu {
namespace {

std::vector<float> naive_gemm(const GemmShape& s, const std::vector<float>& a,
                              const std::vector<float>& b) {
  std::vector<float> c(s.batch * s.m * s.n);
  for (std::int64_t q = 0; q < s.batch; ++q)
    for (std::int64_t i = 0; i < s.m; ++i)
      for (std::int64_t j = 0; j < s.n; ++j) {
        float sum = 0;
        for (std::int64_t p = 0; p < s.k; ++p)
          sum += a[(q * s.m + i) * s.k + p] * b[(q * s.n + j) * s.k + p];
        c[(q * s.m + i) * s.n + j] = sum;
      }
  return c;
}

TEST(ReferenceCheck, GemmF32AcceptsCorrectAndCatchesWrong) {
  const GemmShape shape{DType::f32, 7, 9, 33, 2};
  std::vector<float> a(shape.batch * shape.m * shape.k), b(shape.batch * shape.k * shape.n);
  fill_random(a, 1);
  fill_random(b, 2);
  auto c = naive_gemm(shape, a, b);
  EXPECT_EQ(check_gemm(shape, a.data(), b.data(), c.data()), shape.batch * shape.m * shape.n);

  auto wrong = c;
  wrong[5 * shape.n + 4] += 0.05f;  // one element, a fraction of one product
  EXPECT_THROW(check_gemm(shape, a.data(), b.data(), wrong.data()), CheckFailed);

  wrong = c;
  wrong.back() = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(check_gemm(shape, a.data(), b.data(), wrong.data()), CheckFailed);

  // A reference of the wrong size (k one short) must not match either.
  GemmShape short_k = shape;
  short_k.k = shape.k - 1;
  auto c_short = naive_gemm(short_k, a, b);  // reads a with the wrong row stride
  EXPECT_THROW(check_gemm(shape, a.data(), b.data(), c_short.data()), CheckFailed);
}

TEST(ReferenceCheck, GemmSamplesLargeOutputs) {
  const GemmShape shape{DType::f32, 200, 300, 4, 1};
  std::vector<float> a(shape.m * shape.k), b(shape.k * shape.n);
  fill_random(a, 3);
  fill_random(b, 4);
  auto c = naive_gemm(shape, a, b);
  EXPECT_EQ(check_gemm(shape, a.data(), b.data(), c.data(), 100), 100);
  c.back() += 1.0f;  // the last element is always among the samples
  EXPECT_THROW(check_gemm(shape, a.data(), b.data(), c.data(), 100), CheckFailed);
}

TEST(ReferenceCheck, GemmInt8IsExact) {
  const GemmShape shape{DType::int8, 3, 4, 5, 1};
  std::vector<std::int8_t> a(15), b(20);
  fill_random_s8(a, 5);
  fill_random_s8(b, 6);
  for (auto v : a) EXPECT_NE(v, 0);
  std::vector<std::int32_t> c(12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int p = 0; p < 5; ++p) c[i * 4 + j] += a[i * 5 + p] * b[j * 5 + p];
  EXPECT_NO_THROW(check_gemm(shape, a.data(), b.data(), c.data()));
  c[7] += 1;
  EXPECT_THROW(check_gemm(shape, a.data(), b.data(), c.data()), CheckFailed);
}

TEST(ReferenceCheck, GemmBf16ToleratesOutputRoundingOnly) {
  const GemmShape shape{DType::bf16, 4, 4, 64, 1};
  std::vector<std::uint16_t> a(4 * 64), b(64 * 4), c(16);
  fill_random_bf16(a, 7);
  fill_random_bf16(b, 8);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      float sum = 0;
      for (int p = 0; p < 64; ++p) sum += bf16_to_f32(a[i * 64 + p]) * bf16_to_f32(b[j * 64 + p]);
      c[i * 4 + j] = f32_to_bf16(sum);
    }
  EXPECT_NO_THROW(check_gemm(shape, a.data(), b.data(), c.data()));
  c[3] = f32_to_bf16(bf16_to_f32(c[3]) + 0.5f);
  EXPECT_THROW(check_gemm(shape, a.data(), b.data(), c.data()), CheckFailed);
}

TEST(ReferenceCheck, ConvCatchesWrongElementAndWrongPadding) {
  ConvShape shape;
  shape.dtype = DType::f32;
  shape.n = 1, shape.c = 4, shape.h = 6, shape.w = 5, shape.k = 4, shape.r = 3, shape.s = 3;
  shape.stride = 1, shape.pad = 1, shape.dilation = 1, shape.groups = 2;
  const auto oh = shape.out_h(), ow = shape.out_w();
  const std::int64_t cg = shape.c / shape.groups, kg = shape.k / shape.groups;
  std::vector<float> src(shape.n * shape.c * shape.h * shape.w), w(shape.k * cg * 9);
  fill_random(src, 9);
  fill_random(w, 10);
  const auto run = [&](std::int64_t pad) {
    std::vector<float> dst(shape.k * oh * ow);
    for (std::int64_t oc = 0; oc < shape.k; ++oc)
      for (std::int64_t y = 0; y < oh; ++y)
        for (std::int64_t x = 0; x < ow; ++x) {
          float sum = 0;
          for (std::int64_t ic = 0; ic < cg; ++ic)
            for (int kh = 0; kh < 3; ++kh)
              for (int kw = 0; kw < 3; ++kw) {
                const auto iy = y - pad + kh, ix = x - pad + kw;
                if (iy < 0 || iy >= shape.h || ix < 0 || ix >= shape.w) continue;
                sum += src[((oc / kg) * cg + ic) * shape.h * shape.w + iy * shape.w + ix] *
                       w[((oc * cg + ic) * 3 + kh) * 3 + kw];
              }
          dst[(oc * oh + y) * ow + x] = sum;
        }
    return dst;
  };
  auto dst = run(1);
  EXPECT_NO_THROW(check_conv(shape, src.data(), w.data(), dst.data()));
  auto shifted = run(0);  // the same numbers with the padding wrong
  EXPECT_THROW(check_conv(shape, src.data(), w.data(), shifted.data()), CheckFailed);
  dst[17] -= 0.05f;
  EXPECT_THROW(check_conv(shape, src.data(), w.data(), dst.data()), CheckFailed);
}

TEST(ReferenceCheck, StreamCatchesWrongElement) {
  const std::size_t n = 100;
  std::vector<double> a(n), b(n), c(n);
  for (std::size_t i = 0; i < n; ++i) {
    b[i] = uniform_pm1(1, i);
    c[i] = uniform_pm1(2, i);
    a[i] = b[i] + kStreamScalar * c[i];
  }
  EXPECT_NO_THROW(check_stream(StreamOp::triad, a, b, c, kStreamScalar));
  a[42] = std::nextafter(a[42], 10.0) + 1e-9;
  EXPECT_THROW(check_stream(StreamOp::triad, a, b, c, kStreamScalar), CheckFailed);
  std::vector<double> copy = c;
  EXPECT_NO_THROW(check_stream(StreamOp::copy, copy, {}, c, kStreamScalar));
  copy[0] = -copy[0];
  EXPECT_THROW(check_stream(StreamOp::copy, copy, {}, c, kStreamScalar), CheckFailed);
  // update: c holds the negated values after an odd number of passes, the values after an even one.
  std::vector<double> negated(n);
  for (std::size_t i = 0; i < n; ++i) negated[i] = -c[i];
  EXPECT_NO_THROW(check_stream(StreamOp::update, c, {}, negated, -1.0));
  EXPECT_NO_THROW(check_stream(StreamOp::update, c, {}, c, 1.0));
  EXPECT_THROW(check_stream(StreamOp::update, c, {}, c, -1.0), CheckFailed);
  negated[7] = c[7];
  EXPECT_THROW(check_stream(StreamOp::update, c, {}, negated, -1.0), CheckFailed);
}

TEST(RandomFill, NeverZeroAndInRange) {
  std::vector<float> f(10000);
  fill_random(f, 11);
  std::vector<std::uint16_t> h(10000);
  fill_random_bf16(h, 12);
  for (std::size_t i = 0; i < f.size(); ++i) {
    EXPECT_NE(f[i], 0.0f);
    EXPECT_LE(std::fabs(f[i]), 1.0f);
    EXPECT_NE(bf16_to_f32(h[i]), 0.0f);
  }
}

}  // namespace
}  // namespace truepeak::cpu
