#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "calibrate/plan.hpp"
#include "core/units.hpp"

namespace truepeak {
namespace {

DeviceDescription gpu(const std::string& cc, std::int64_t l2_bytes, double memory_gb) {
  DeviceDescription d;
  d.id = "cuda:0";
  d.kind = "gpu";
  d.name = "test gpu";
  d.properties = {{"compute_capability", cc}, {"sms", 132}};
  d.memory_bytes = static_cast<std::int64_t>(memory_gb * 1e9);
  d.levels = {{"L2", l2_bytes}, {"HBM", d.memory_bytes}};
  return d;
}

const DeviceDescription kH200 = gpu("9.0", 50 * kMiB, 150);
const DeviceDescription kA100 = gpu("8.0", 40 * kMiB, 42.5);
const DeviceDescription kT4 = gpu("7.5", 4 * kMiB, 16);

bool has_dtype(const Plan& plan, DType dtype) {
  return std::any_of(plan.gemm.begin(), plan.gemm.end(),
                     [&](const GemmShape& s) { return s.dtype == dtype; });
}

bool has_gemm(const Plan& plan, DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) {
  return std::any_of(plan.gemm.begin(), plan.gemm.end(), [&](const GemmShape& s) {
    return s.dtype == dtype && s.m == m && s.n == n && s.k == k && s.batch == 1;
  });
}

TEST(GpuPlan, Fp8OnlyFromComputeCapability89) {
  for (const Suite suite : {Suite::quick, Suite::full}) {
    EXPECT_TRUE(has_dtype(gpu_plan(kH200, suite), DType::fp8_e4m3));
    EXPECT_FALSE(has_dtype(gpu_plan(kA100, suite), DType::fp8_e4m3));
    EXPECT_FALSE(has_dtype(gpu_plan(kT4, suite), DType::fp8_e4m3));
    EXPECT_FALSE(has_dtype(gpu_plan(kT4, suite), DType::bf16));
    EXPECT_FALSE(has_dtype(gpu_plan(kT4, suite), DType::tf32));
    for (const DType dtype : {DType::f32, DType::f16, DType::int8})
      EXPECT_TRUE(has_dtype(gpu_plan(kT4, suite), dtype));
  }
}

TEST(GpuPlan, QuickHoldsThePeakPoints) {
  const Plan quick = gpu_plan(kH200, Suite::quick);
  EXPECT_TRUE(has_gemm(quick, DType::bf16, 8192, 8192, 8192));
  EXPECT_TRUE(has_gemm(quick, DType::bf16, 16384, 16384, 16384));
  EXPECT_TRUE(has_gemm(quick, DType::bf16, 1, 8192, 8192));  // decode-like
  EXPECT_GE(*std::max_element(quick.stream_bytes.begin(), quick.stream_bytes.end()), 2 * kGiB);
  EXPECT_NE(std::find(quick.transfer_bytes.begin(), quick.transfer_bytes.end(), 256 * kMiB),
            quick.transfer_bytes.end());
  EXPECT_GE(quick.transfer_bytes.back(), kGiB);
  EXPECT_EQ(quick.transfer_bytes.front(), 4 * kKiB);
  EXPECT_GT(quick.bidirectional_bytes, 0);
  EXPECT_FALSE(quick.device_copy_bytes.empty());
  EXPECT_NE(std::find(quick.stream_ops.begin(), quick.stream_ops.end(), StreamOp::triad),
            quick.stream_ops.end());
}

TEST(GpuPlan, HeadlinePointsAreConfirmedWithKernelsMadeAgainAndNoBursts) {
  // A GPU's large GEMMs hold gigabytes each: its candidates are not kept between uses.
  for (const auto suite : {Suite::quick, Suite::full}) {
    const Plan plan = gpu_plan(kH200, suite);
    EXPECT_TRUE(plan.confirm_peaks);
    EXPECT_EQ(plan.watch_share, 0.0);
    EXPECT_FALSE(plan.watch_keeps_kernels);
  }
}

TEST(GpuPlan, FullGemmGridRunsFromSkinnyToSquareOnRegularLadders) {
  const Plan full = gpu_plan(kH200, Suite::full);
  for (const DType dtype : {DType::bf16, DType::f16, DType::fp8_e4m3, DType::int8}) {
    std::set<std::int64_t> squares, rows, sizes, batches, widths, tokens;
    for (const auto& s : full.gemm) {
      if (s.dtype != dtype) continue;
      if (s.batch == 1 && s.m == s.n && s.n == s.k) squares.insert(s.m);
      if (s.batch == 1 && s.m < s.n && s.m <= 256 && s.n % 2 == 0) {
        rows.insert(s.m);
        sizes.insert(s.n);
        sizes.insert(s.k);
      }
      if (s.batch > 1) {
        batches.insert(s.batch);
        widths.insert(std::min({s.m, s.n, s.k}));
        tokens.insert(std::max(s.m, s.n));
      }
    }
    // Squares of every power of two from 256 to 16384.
    EXPECT_EQ(squares, (std::set<std::int64_t>{256, 512, 1024, 2048, 4096, 8192, 16384}));
    // Rows from 1 to 256, at most 4x apart; widths and depths from 4096 to 16384, 2x apart.
    EXPECT_EQ(rows, (std::set<std::int64_t>{1, 4, 16, 64, 256})) << to_string(dtype);
    EXPECT_EQ(sizes, (std::set<std::int64_t>{4096, 8192, 16384})) << to_string(dtype);
    // Strided batches over three batch counts, head widths and sequence lengths.
    EXPECT_EQ(batches.size(), 3u) << to_string(dtype);
    EXPECT_EQ(widths.size(), 3u) << to_string(dtype);
    EXPECT_EQ(tokens.size(), 3u) << to_string(dtype);
  }
  // The 32-bit types: fewer rows.
  for (const DType dtype : {DType::f32, DType::tf32}) {
    EXPECT_TRUE(has_gemm(full, dtype, 1, 4096, 4096)) << to_string(dtype);
    EXPECT_FALSE(has_gemm(full, dtype, 64, 8192, 8192)) << to_string(dtype);
  }
  EXPECT_TRUE(has_gemm(full, DType::bf16, 4096, 4096, 64));  // small K
  EXPECT_GT(full.gemm.size(), gpu_plan(kH200, Suite::quick).gemm.size());
  EXPECT_GT(full.transfer_bytes.size(), gpu_plan(kH200, Suite::quick).transfer_bytes.size());
}

TEST(GpuPlan, FullConvGridHasEveryKind) {
  const Plan full = gpu_plan(kH200, Suite::full);
  for (const DType dtype : {DType::f16, DType::bf16, DType::f32}) {
    std::set<std::int64_t> dense_kernels, depthwise_kernels, strides, batches, spatial, channels;
    std::set<ConvLayout> layouts;
    for (const auto& [s, layout] : full.conv) {
      if (s.dtype != dtype) continue;
      (s.groups == 1 ? dense_kernels : depthwise_kernels).insert(s.r);
      EXPECT_TRUE(s.groups == 1 || (s.groups == s.c && s.groups == s.k)) << s.str();
      strides.insert(s.stride);
      batches.insert(s.n);
      layouts.insert(layout);
      if (s.c > 3) {
        spatial.insert(s.h);
        channels.insert(s.c);
      }
    }
    EXPECT_EQ(dense_kernels, (std::set<std::int64_t>{1, 3, 5, 7})) << to_string(dtype);
    EXPECT_EQ(depthwise_kernels, (std::set<std::int64_t>{3, 5, 7})) << to_string(dtype);
    EXPECT_EQ(strides, (std::set<std::int64_t>{1, 2})) << to_string(dtype);
    EXPECT_EQ(batches, (std::set<std::int64_t>{1, 32, 128})) << to_string(dtype);
    EXPECT_EQ(layouts, (std::set<ConvLayout>{ConvLayout::nhwc, ConvLayout::nchw}));
    EXPECT_EQ(*spatial.begin(), 7);
    EXPECT_EQ(*spatial.rbegin(), 112);
    EXPECT_LE(*channels.begin(), 16);
    EXPECT_GE(*channels.rbegin(), 1024);
  }
}

TEST(GpuPlan, NoPointIsMeasuredTwiceAndTheGridsStayWithinTheirBudgets) {
  for (const Suite suite : {Suite::quick, Suite::full}) {
    const Plan plan = gpu_plan(kH200, suite);
    std::set<std::string> gemm, conv;
    for (const auto& s : plan.gemm) EXPECT_TRUE(gemm.insert(s.str()).second) << s.str();
    for (const auto& [s, l] : plan.conv)
      EXPECT_TRUE(conv.insert(s.str() + " " + std::string(to_string(l))).second) << s.str();
    // A few minutes for the default suite and about one for the quick one on an H200.
    EXPECT_LE(plan.gemm.size(), suite == Suite::quick ? 25u : 160u);
    EXPECT_LE(plan.conv.size(), suite == Suite::quick ? 10u : 180u);
  }
}

TEST(GpuPlan, ProductsWithUnalignedRowsAreMeasuredWhereTheLibraryTakesThem) {
  // An odd n leaves the output's rows unaligned (a vocabulary head of odd size); fp8 and int8
  // kernels need aligned rows, so only the wider types measure them.
  const Plan full = gpu_plan(kH200, Suite::full);
  for (const DType dtype : {DType::bf16, DType::f16, DType::tf32, DType::f32})
    EXPECT_TRUE(has_gemm(full, dtype, 8192, 30001, 1024)) << to_string(dtype);
  for (const DType dtype : {DType::fp8_e4m3, DType::int8})
    EXPECT_TRUE(std::none_of(full.gemm.begin(), full.gemm.end(), [&](const GemmShape& s) {
      return s.dtype == dtype && s.n % 2 == 1;
    })) << to_string(dtype);
  EXPECT_TRUE(has_gemm(gpu_plan(kH200, Suite::quick), DType::bf16, 8192, 30001, 1024));
}

TEST(GpuPlan, StreamSweepSeparatesL2FromDeviceMemory) {
  for (const auto& device : {kH200, kA100, kT4}) {
    for (const Suite suite : {Suite::quick, Suite::full}) {
      const Plan plan = gpu_plan(device, suite);
      const std::int64_t l2 = *device.levels.front().bytes;
      const auto& sizes = plan.stream_bytes;
      ASSERT_FALSE(sizes.empty());
      EXPECT_TRUE(std::is_sorted(sizes.begin(), sizes.end()));
      EXPECT_LE(sizes.front(), l2 / 4) << "a point well inside L2";
      EXPECT_GE(sizes.back(), 4 * l2) << "a point in device memory only";
      EXPECT_LE(sizes.back(), *device.memory_bytes / 4) << "the sweep fits in memory";
      EXPECT_GE(
          std::count_if(sizes.begin(), sizes.end(), [&](std::int64_t b) { return b >= 4 * l2; }),
          2);
    }
  }
}

TEST(GpuPlan, ShapesAreValid) {
  for (const Suite suite : {Suite::quick, Suite::full}) {
    const Plan plan = gpu_plan(kH200, suite);
    for (const auto& s : plan.gemm)
      EXPECT_TRUE(s.m > 0 && s.n > 0 && s.k > 0 && s.batch > 0) << s.str();
    for (const auto& [s, layout] : plan.conv) {
      EXPECT_EQ(s.c % s.groups, 0) << s.str();
      EXPECT_EQ(s.k % s.groups, 0) << s.str();
      EXPECT_GT(s.out_h(), 0) << s.str();
      EXPECT_NE(layout, ConvLayout::any);  // the layout of every GPU point is stated
    }
    EXPECT_FALSE(plan.conv.empty());
    EXPECT_EQ(plan.fma_dtypes, (std::vector<DType>{DType::f32, DType::f16, DType::f64}));
  }
  // bf16 convolutions only where the tensor cores have bf16.
  const Plan t4 = gpu_plan(kT4, Suite::full);
  EXPECT_TRUE(std::none_of(t4.conv.begin(), t4.conv.end(),
                           [](const auto& p) { return p.first.dtype == DType::bf16; }));
}

}  // namespace
}  // namespace truepeak
