// The cuBLASLt layout of the TN GEMM, its alignment rules and the check tolerances: host only.
#include "kernels/cuda/gemm_layout.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "calibrate/plan.hpp"
#include "core/units.hpp"

namespace truepeak::cuda_detail {
namespace {

// Element (row, col) of batch b of a column-major matrix described by `m`.
std::int64_t at(const LtMatrix& m, std::int64_t b, std::int64_t row, std::int64_t col) {
  return b * m.batch_stride + col * m.ld + row;
}

TEST(GemmLayout, ColumnMajorTnProductIsTheRowMajorLinearLayer) {
  const GemmShape shape{DType::f32, 3, 5, 4, 2};
  const TnLayout tn = tn_layout(shape);
  // X[b][m][k], W[b][n][k] row-major, filled with distinct values.
  std::vector<double> x(shape.batch * shape.m * shape.k), w(shape.batch * shape.n * shape.k);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.5 - 0.25 * static_cast<double>(i);
  // What cuBLASLt computes from the descriptors: D(n x m) = op_T(A) * B, column-major.
  std::vector<double> d(shape.batch * shape.m * shape.n, 0);
  for (std::int64_t b = 0; b < shape.batch; ++b)
    for (std::int64_t row = 0; row < tn.c.rows; ++row)
      for (std::int64_t col = 0; col < tn.c.cols; ++col) {
        double sum = 0;
        for (std::int64_t kk = 0; kk < shape.k; ++kk)
          sum += w[at(tn.a, b, kk, row)] * x[at(tn.b, b, kk, col)];  // A^T(row, kk) = A(kk, row)
        d[at(tn.c, b, row, col)] = sum;
      }
  // The row-major contract: C[b][i][j] = sum_k X[b][i][k] * W[b][j][k].
  for (std::int64_t b = 0; b < shape.batch; ++b)
    for (std::int64_t i = 0; i < shape.m; ++i)
      for (std::int64_t j = 0; j < shape.n; ++j) {
        double sum = 0;
        for (std::int64_t kk = 0; kk < shape.k; ++kk)
          sum += x[(b * shape.m + i) * shape.k + kk] * w[(b * shape.n + j) * shape.k + kk];
        EXPECT_DOUBLE_EQ(d[(b * shape.m + i) * shape.n + j], sum) << b << " " << i << " " << j;
      }
}

TEST(GemmLayout, DimensionsLeadingDimensionsAndBatchStrides) {
  const TnLayout tn = tn_layout(GemmShape{DType::bf16, 64, 128, 256, 3});
  EXPECT_EQ(tn.a.rows, 256);
  EXPECT_EQ(tn.a.cols, 128);
  EXPECT_EQ(tn.a.ld, 256);
  EXPECT_EQ(tn.a.batch_stride, 256 * 128);
  EXPECT_EQ(tn.b.rows, 256);
  EXPECT_EQ(tn.b.cols, 64);
  EXPECT_EQ(tn.b.ld, 256);
  EXPECT_EQ(tn.b.batch_stride, 256 * 64);
  EXPECT_EQ(tn.c.rows, 128);
  EXPECT_EQ(tn.c.cols, 64);
  EXPECT_EQ(tn.c.ld, 128);
  EXPECT_EQ(tn.c.batch_stride, 128 * 64);
  EXPECT_EQ(tn_layout(GemmShape{DType::bf16, 64, 128, 256, 1}).c.batch_stride, 0);
  // A decode-like GEMM: one row of X is one column of B.
  const TnLayout decode = tn_layout(GemmShape{DType::f16, 1, 4096, 4096, 1});
  EXPECT_EQ(decode.b.cols, 1);
  EXPECT_EQ(decode.b.ld, 4096);
  EXPECT_EQ(decode.c.rows, 4096);
  EXPECT_EQ(decode.c.ld, 4096);
}

TEST(GemmLayout, Fp8AndInt8AlignmentRules) {
  EXPECT_FALSE(gemm_alignment_problem(GemmShape{DType::fp8_e4m3, 1, 4096, 4096, 1}));
  EXPECT_FALSE(gemm_alignment_problem(GemmShape{DType::fp8_e4m3, 512, 512, 64, 64}));
  EXPECT_TRUE(gemm_alignment_problem(GemmShape{DType::fp8_e4m3, 64, 64, 40, 1}));
  EXPECT_FALSE(gemm_alignment_problem(GemmShape{DType::int8, 64, 64, 4, 1}));
  EXPECT_TRUE(gemm_alignment_problem(GemmShape{DType::int8, 64, 64, 6, 1}));
  // The 16-bit and wider types take any k.
  for (const DType dtype : {DType::f32, DType::tf32, DType::f16, DType::bf16})
    EXPECT_FALSE(gemm_alignment_problem(GemmShape{dtype, 7, 9, 13, 1}));
  const auto reason = gemm_alignment_problem(GemmShape{DType::fp8_e4m3, 64, 64, 40, 1});
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("multiple of 16"), std::string::npos) << *reason;
}

TEST(GemmLayout, ToleranceCoversOutputRoundingOnly) {
  // int8 is exact: an off-by-one is a failure.
  EXPECT_LT(gemm_tolerance(DType::int8, 1e6, 1e8), 1.0);
  // One rounding of a bf16 output (half an ulp, 2^-8 relative) is accepted; 2% off is not.
  const double ref = 37.0, abs_sum = 1000.0;
  const double bf16_tol = gemm_tolerance(DType::bf16, ref, abs_sum);
  EXPECT_GE(bf16_tol, std::ldexp(ref, -8));
  EXPECT_LT(bf16_tol, 0.02 * abs_sum);
  // Narrower types get wider tolerances, never narrower.
  EXPECT_LE(gemm_tolerance(DType::f32, ref, abs_sum), gemm_tolerance(DType::tf32, ref, abs_sum));
  EXPECT_LE(gemm_tolerance(DType::f16, ref, abs_sum), gemm_tolerance(DType::bf16, ref, abs_sum));
  EXPECT_LE(gemm_tolerance(DType::bf16, ref, abs_sum),
            gemm_tolerance(DType::fp8_e4m3, ref, abs_sum));
  // A wrong index (a different sum of the same size) falls outside every float tolerance.
  for (const DType dtype : {DType::f32, DType::tf32, DType::f16, DType::bf16, DType::fp8_e4m3})
    EXPECT_LT(gemm_tolerance(dtype, ref, abs_sum), 0.5 * ref) << to_string(dtype);
}

TEST(GemmLayout, EveryPlannedGemmMeetsTheAlignmentRules) {
  DeviceDescription h200;
  h200.id = "cuda:0";
  h200.kind = "gpu";
  h200.properties = {{"compute_capability", "9.0"}, {"sms", 132}};
  h200.memory_bytes = 141 * kGiB;
  h200.levels = {{"L2", 50 * kMiB}, {"HBM", h200.memory_bytes}};
  for (const Suite suite : {Suite::quick, Suite::full})
    for (const GemmShape& shape : gpu_plan(h200, suite).gemm)
      EXPECT_FALSE(gemm_alignment_problem(shape)) << shape.str();
}

}  // namespace
}  // namespace truepeak::cuda_detail
