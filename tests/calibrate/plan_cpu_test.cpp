// The CPU plan: the sweep reaches DRAM and every level, and the grids hold the required classes.
#include <gtest/gtest.h>

#include <algorithm>

#include "calibrate/plan.hpp"
#include "core/units.hpp"

namespace truepeak {
namespace {

DeviceDescription this_kind_of_vm() {
  DeviceDescription d;
  d.id = "cpu";
  d.kind = "cpu";
  d.levels = {{"L1", 96 * kKiB}, {"L2", 4 * kMiB}, {"L3", 260 * kMiB}, {"DRAM", 24 * kGiB}};
  d.properties["onednn_isa"] = "avx512_core_bf16";
  return d;
}

bool has_gemm(const Plan& plan, DType dtype, auto predicate) {
  return std::any_of(plan.gemm.begin(), plan.gemm.end(),
                     [&](const GemmShape& s) { return s.dtype == dtype && predicate(s); });
}

class CpuPlanTest : public ::testing::TestWithParam<Suite> {};

TEST_P(CpuPlanTest, MemoryProbeReachesPastTheCacheBelowTheLast) {
  // 8x the 4 MiB L2: past one core's caches, far below the 260 MiB L3's whole run of a sweep.
  EXPECT_EQ(cpu_plan(this_kind_of_vm(), GetParam()).memory_sentinel_bytes, 32 * kMiB);
  // A part with a small L2 still probes at least 8 MiB.
  DeviceDescription small = this_kind_of_vm();
  small.levels = {{"L1", 32 * kKiB}, {"L2", 256 * kKiB}, {"L3", 8 * kMiB}, {"DRAM", 8 * kGiB}};
  EXPECT_EQ(cpu_plan(small, GetParam()).memory_sentinel_bytes, 8 * kMiB);
}

TEST_P(CpuPlanTest, ColdWeightConvolutionsAreBatchOneBlockedLayersWithLargeWeights) {
  const Plan plan = cpu_plan(this_kind_of_vm(), GetParam());
  ASSERT_FALSE(plan.conv_cold.empty());
  for (const auto& [shape, layout] : plan.conv_cold) {
    EXPECT_EQ(shape.n, 1) << shape.str();
    EXPECT_EQ(layout, ConvLayout::blocked) << shape.str();
    EXPECT_GE(shape.k * (shape.c / shape.groups) * shape.r * shape.s * dtype_bytes(shape.dtype),
              256 * kKiB)
        << shape.str();
    // Each is also measured warm, in the same layout.
    EXPECT_TRUE(std::any_of(plan.conv.begin(), plan.conv.end(), [&](const auto& c) {
      return c.first == shape && c.second == layout;
    })) << shape.str();
  }
  // A depthwise layer's weights are small: never repeated cold.
  for (const auto& [shape, layout] : plan.conv_cold) EXPECT_EQ(shape.groups, 1) << shape.str();
}

TEST_P(CpuPlanTest, StreamSweepSpansAllLevels) {
  const auto device = this_kind_of_vm();
  const Plan plan = cpu_plan(device, GetParam());
  ASSERT_FALSE(plan.stream_bytes.empty());
  EXPECT_TRUE(std::is_sorted(plan.stream_bytes.begin(), plan.stream_bytes.end()));
  // Strictly past 4x the LLC, as the DRAM level requires.
  EXPECT_GT(plan.stream_bytes.back(), 4 * 260 * kMiB);
  // At least one point inside each cache level (at most half its capacity).
  for (const auto& [lo, hi] : {std::pair{std::int64_t{0}, 48 * kKiB},
                               std::pair{192 * kKiB, 2 * kMiB}, std::pair{8 * kMiB, 130 * kMiB}}) {
    EXPECT_TRUE(std::any_of(plan.stream_bytes.begin(), plan.stream_bytes.end(),
                            [&](std::int64_t b) { return b > lo && b <= hi; }))
        << lo << ".." << hi;
  }
  EXPECT_NE(std::find(plan.stream_ops.begin(), plan.stream_ops.end(), StreamOp::triad),
            plan.stream_ops.end());
  EXPECT_EQ(plan.fma_dtypes, std::vector<DType>{DType::f32});
  EXPECT_TRUE(plan.transfer_bytes.empty());
}

TEST(CpuPlan, DefaultSuiteMeasuresClassifiersAsConvolutionsOver1x1WithColdWeightsToo) {
  const Plan full = cpu_plan(this_kind_of_vm(), Suite::full);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    const auto classifier = [&](const auto& point) {
      const ConvShape& s = point.first;
      return s.dtype == dtype && s.h == 1 && s.w == 1 && s.r == 1 && s.n == 1 && s.c >= 4096;
    };
    EXPECT_TRUE(std::any_of(full.conv.begin(), full.conv.end(), classifier)) << to_string(dtype);
    EXPECT_TRUE(std::any_of(full.conv_cold.begin(), full.conv_cold.end(), classifier)) << to_string(dtype);
  }
}

TEST(CpuPlan, DefaultSuiteMeasuresBatchedClassifiersBlocked) {
  const Plan full = cpu_plan(this_kind_of_vm(), Suite::full);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    for (const std::int64_t n : {8, 32}) {
      EXPECT_TRUE(std::any_of(full.conv.begin(), full.conv.end(), [&](const auto& point) {
        const ConvShape& s = point.first;
        return s.dtype == dtype && s.n == n && s.h == 1 && s.w == 1 && s.r == 1 && s.c >= 1024 &&
               point.second == ConvLayout::blocked;
      })) << to_string(dtype) << " n=" << n;
    }
    // One with weights of a large classifier's (VGG's first: 392 MiB in f32), past batch 1.
    EXPECT_TRUE(std::any_of(full.conv.begin(), full.conv.end(), [&](const auto& point) {
      const ConvShape& s = point.first;
      return s.dtype == dtype && s.n > 1 && s.h == 1 && s.weight_bytes() >= 128.0 * kMiB;
    })) << to_string(dtype);
  }
  // The quick suite has no time for them.
  const Plan quick = cpu_plan(this_kind_of_vm(), Suite::quick);
  EXPECT_FALSE(std::any_of(quick.conv.begin(), quick.conv.end(), [](const auto& point) {
    return point.first.h == 1 && point.first.n > 1;
  }));
}

TEST(CpuPlan, DefaultSuiteMeasuresMainMemoryTwiceByTheTriadAlone) {
  const auto device = this_kind_of_vm();
  const Plan full = cpu_plan(device, Suite::full);
  ASSERT_FALSE(full.triad_only_bytes.empty());
  // Twice the first main-memory size, itself past 4x the last-level cache (260 MiB).
  EXPECT_EQ(full.triad_only_bytes.back(), 2 * full.stream_bytes.back());
  EXPECT_GT(full.stream_bytes.back(), 4 * 260 * kMiB);
  EXPECT_TRUE(cpu_plan(device, Suite::quick).triad_only_bytes.empty());
}

TEST(CpuPlan, DefaultSuiteSweepsTheTriadWhereTheLastLevelCacheEnds) {
  // Between half and all of the 260 MiB last-level cache, at sizes the main sweep (steps of 4x)
  // leaves out, so that the estimator sees where the share of it this machine gets ends.
  const Plan full = cpu_plan(this_kind_of_vm(), Suite::full);
  std::vector<std::int64_t> inside;
  for (const auto bytes : full.triad_only_bytes)
    if (bytes >= 130 * kMiB && bytes < 260 * kMiB) inside.push_back(bytes);
  EXPECT_GE(inside.size(), 3u);
  for (const auto bytes : inside)
    EXPECT_EQ(std::count(full.stream_bytes.begin(), full.stream_bytes.end(), bytes), 0) << bytes;
}

TEST_P(CpuPlanTest, GemmGridHasEveryClass) {
  const Plan plan = cpu_plan(this_kind_of_vm(), GetParam());
  for (const DType dtype : {DType::f32, DType::bf16, DType::int8}) {
    EXPECT_TRUE(has_gemm(plan, dtype,
                         [](const GemmShape& s) { return s.m == 64 && s.n == 64 && s.k == 64; }));
    EXPECT_TRUE(has_gemm(
        plan, dtype, [](const GemmShape& s) { return s.m == s.n && s.n == s.k && s.m >= 2048; }));
    EXPECT_TRUE(has_gemm(
        plan, dtype, [](const GemmShape& s) { return s.m == 1 && s.n >= 4096 && s.k >= 4096; }));
    EXPECT_TRUE(has_gemm(plan, dtype, [](const GemmShape& s) { return s.k <= 64 && s.m >= 1024; }));
    EXPECT_TRUE(has_gemm(plan, dtype, [](const GemmShape& s) { return s.batch >= 12; }));
  }
  if (GetParam() == Suite::full) {
    for (const DType dtype : {DType::f32, DType::bf16, DType::int8}) {
      EXPECT_TRUE(has_gemm(plan, dtype, [](const GemmShape& s) {
        return s.m == 4096 && s.n == 4096 && s.k == 4096;
      }));
    }
    EXPECT_TRUE(
        has_gemm(plan, DType::f32, [](const GemmShape& s) { return s.m == 8 && s.n >= 4096; }));
    // Decode-like M = 1 and 8 against layer-sized weights, not only the largest.
    for (const DType dtype : {DType::f32, DType::bf16}) {
      for (const std::int64_t m : {1, 8}) {
        EXPECT_TRUE(has_gemm(plan, dtype, [&](const GemmShape& s) {
          return s.m == m && s.n == 1024 && s.k == 1024;
        })) << m;
      }
      // A decode step's attention: one row per head, batched over the heads.
      EXPECT_TRUE(has_gemm(plan, dtype, [](const GemmShape& s) { return s.m == 1 && s.batch >= 12; }))
          << to_string(dtype);
      // A language-model head, a vocabulary-wide N: a prefill's rows, and a decode step's.
      for (const std::int64_t m : {1, 8, 128}) {
        EXPECT_TRUE(has_gemm(plan, dtype, [&](const GemmShape& s) {
          return s.m == m && s.n >= 32768 && s.k <= 1024 && s.batch == 1;
        })) << to_string(dtype) << " m " << m;
      }
    }
  }
}

TEST_P(CpuPlanTest, ConvGridHasEveryClass) {
  const Plan plan = cpu_plan(this_kind_of_vm(), GetParam());
  const auto has = [&](DType dtype, auto predicate) {
    return std::any_of(plan.conv.begin(), plan.conv.end(), [&](const auto& point) {
      return point.first.dtype == dtype && predicate(point.first, point.second);
    });
  };
  for (const DType dtype : {DType::f32, DType::bf16}) {
    // Every layer both as the library prefers and channel-blocked; grouped ones (not depthwise)
    // only as the library prefers, which blocks them by the group's width.
    for (const auto& [shape, layout] : plan.conv) {
      if (shape.dtype != dtype || layout != ConvLayout::any) continue;
      if (shape.groups > 1 && shape.groups != shape.c) continue;
      EXPECT_TRUE(has(dtype, [&, s0 = shape](const ConvShape& s, ConvLayout l) {
        return l == ConvLayout::blocked && s.str() == s0.str();
      })) << shape.str();
    }
    EXPECT_TRUE(has(dtype, [&](const ConvShape& s, ConvLayout l) {
      return s.r == 7 && s.stride == 2 && l == ConvLayout::any;
    }));
    EXPECT_TRUE(
        has(dtype, [&](const ConvShape& s, ConvLayout) { return s.r == 1 && s.groups == 1; }));
    EXPECT_TRUE(has(dtype, [&](const ConvShape& s, ConvLayout) {
      return s.r == 3 && s.groups == 1 && s.stride == 1;
    }));
    EXPECT_TRUE(
        has(dtype, [&](const ConvShape& s, ConvLayout) { return s.r == 3 && s.stride == 2; }));
    EXPECT_TRUE(has(
        dtype, [&](const ConvShape& s, ConvLayout) { return s.groups == s.c && s.groups > 1; }));
    if (GetParam() == Suite::full) {
      // Grouped 3x3s of 4, 8, 16 and 32 channels a group (ResNeXt, RegNet), strided too, at batch
      // 1 and larger, never forced into 16-channel blocks.
      const auto grouped = [](const ConvShape& s) { return s.groups > 1 && s.groups != s.c; };
      for (const std::int64_t width : {4, 8, 16, 32}) {
        EXPECT_TRUE(has(dtype, [&](const ConvShape& s, ConvLayout) {
          return grouped(s) && s.c / s.groups == width;
        })) << width;
      }
      EXPECT_TRUE(has(dtype, [&](const ConvShape& s, ConvLayout) { return grouped(s) && s.stride == 2; }));
      EXPECT_TRUE(has(dtype, [&](const ConvShape& s, ConvLayout) { return grouped(s) && s.n > 1; }));
      EXPECT_FALSE(has(dtype, [&](const ConvShape& s, ConvLayout l) {
        return grouped(s) && l == ConvLayout::blocked;
      }));
    }
    EXPECT_TRUE(has(dtype, [&](const ConvShape& s, ConvLayout) { return s.n == 1; }));
    EXPECT_TRUE(has(dtype, [&](const ConvShape& s, ConvLayout) { return s.n >= 8; }));
    // Every ResNet stage resolution appears (56, 28 or a strided 56->28, 14, 7).
    for (const std::int64_t hw : {56, 14, 7}) {
      EXPECT_TRUE(has(dtype, [&](const ConvShape& s, ConvLayout) { return s.h == hw; })) << hw;
    }
  }
  EXPECT_TRUE(
      has(DType::f32, [](const ConvShape&, ConvLayout l) { return l == ConvLayout::nhwc; }));
  for (const auto& [shape, layout] : plan.conv) {
    EXPECT_GT(shape.out_h(), 0);
    EXPECT_EQ(shape.c % shape.groups, 0);
  }
}

TEST_P(CpuPlanTest, DecodeAndPrefillGemmsAgainWithColdWeights) {
  // With a 260 MiB cache every decode- or prefill-like shape (M <= 128, one product) of the grid
  // whose weights take 256 KiB or more is measured a second time with cold weights, and nothing
  // else is.
  const Plan plan = cpu_plan(this_kind_of_vm(), GetParam());
  for (const auto& shape : plan.gemm) {
    const bool decode_or_prefill =
        shape.m <= 128 && shape.batch == 1 && shape.weight_bytes() >= 256.0 * kKiB;
    EXPECT_EQ(std::count(plan.gemm_cold.begin(), plan.gemm_cold.end(), shape),
              decode_or_prefill ? 1 : 0)
        << shape.str();
  }
  EXPECT_FALSE(plan.gemm_cold.empty());
  // A prefill's rows against a BERT-sized layer have a cold twin in the default suite.
  const GemmShape prefill{DType::bf16, 128, 4096, 1024, 1};
  EXPECT_EQ(std::count(plan.gemm_cold.begin(), plan.gemm_cold.end(), prefill),
            GetParam() == Suite::full ? 1 : 0);
  // With a 32 MiB cache, weights of 64 MiB and more are cold without copies: no second point.
  DeviceDescription small = this_kind_of_vm();
  small.levels[2].bytes = 32 * kMiB;
  const Plan small_plan = cpu_plan(small, GetParam());
  const GemmShape f32_4k{DType::f32, 1, 4096, 4096, 1}, bf16_4k{DType::bf16, 1, 4096, 4096, 1};
  EXPECT_EQ(std::count(small_plan.gemm_cold.begin(), small_plan.gemm_cold.end(), f32_4k), 0);
  EXPECT_EQ(std::count(small_plan.gemm_cold.begin(), small_plan.gemm_cold.end(), bf16_4k), 1);
}

TEST_P(CpuPlanTest, RulesAreSane) {
  const Plan plan = cpu_plan(this_kind_of_vm(), GetParam());
  for (const StopRule* r : {&plan.gemm_rule, &plan.conv_rule, &plan.stream_rule, &plan.fma_rule,
                            &plan.overhead_rule, &plan.sentinel_rule}) {
    EXPECT_GE(r->min_samples, 3);
    EXPECT_GT(r->budget_s, 0.0);
    EXPECT_LE(r->budget_s, 3.0);
  }
  EXPECT_GT(plan.sentinel_slowdown, 1.0);
  // The quick suite (30 s) never waits for a quiet machine; the default waits at most 20 s.
  EXPECT_LE(plan.quiet_wait_s, GetParam() == Suite::quick ? 0.0 : 20.0);
  // Each suite aims to end inside its goal (30 s, 3 min) with room to write the profile.
  EXPECT_GT(plan.deadline_s, 0.0);
  EXPECT_LT(plan.deadline_s, GetParam() == Suite::quick ? 30.0 : 180.0);
  // Only the default suite spends what its goal leaves on more bursts, for every category; the
  // quick one ends when its points are done.
  EXPECT_EQ(plan.closing_watch, GetParam() == Suite::full);
  EXPECT_EQ(plan.closing_watch_min_claim, 0.0);
  // The peak watch: bursts of a few samples with no warm-up, for a small share of the run.
  EXPECT_GT(plan.watch_share, 0.0);
  EXPECT_LE(plan.watch_share, 0.1);
  EXPECT_TRUE(plan.watch_keeps_kernels);
  EXPECT_EQ(plan.burst_rule.warmup_runs, 0);
  EXPECT_LE(plan.burst_rule.max_samples, 3);
  EXPECT_LE(plan.burst_rule.budget_s, 0.05);
}

TEST(CpuPlan, QuickIsSmallerThanFull) {
  const auto quick = cpu_plan(this_kind_of_vm(), Suite::quick);
  const auto full = cpu_plan(this_kind_of_vm(), Suite::full);
  EXPECT_LT(quick.gemm.size(), full.gemm.size());
  EXPECT_LT(quick.conv.size(), full.conv.size());
  EXPECT_LE(quick.stream_ops.size() * quick.stream_bytes.size(),
            full.stream_ops.size() * full.stream_bytes.size());
}

TEST(CpuPlan, VectorOpsCoverBothFloatTypes) {
  const auto quick = cpu_plan(this_kind_of_vm(), Suite::quick);
  const auto full = cpu_plan(this_kind_of_vm(), Suite::full);
  // Every op at the calibration size, and the two reorders past the caches too.
  EXPECT_EQ(full.vector_ops.size(), 2 * (vector_op_names().size() + 2));
  for (const auto& plan : {quick, full}) {
    for (const DType dtype : {DType::f32, DType::bf16}) {
      for (const char* op : {"gelu", "softmax", "layernorm"}) {
        const VectorOpShape shape{op, dtype, 256, 1024};
        EXPECT_EQ(std::count(plan.vector_ops.begin(), plan.vector_ops.end(), shape), 1) << shape.str();
      }
    }
    EXPECT_GE(plan.vector_op_rule.min_samples, 3);
    EXPECT_LE(plan.vector_op_rule.budget_s, 0.5);
  }
  EXPECT_LT(quick.vector_ops.size(), full.vector_ops.size());
}

TEST(CpuPlan, TheDefaultSuiteTimesTheLayoutChangesFromMainMemoryToo) {
  const auto device = this_kind_of_vm();
  const double llc = static_cast<double>(largest_cache_bytes(device.levels));
  const auto past_caches = [&](const Plan& plan, const std::string& op, DType dtype) {
    return std::count_if(plan.vector_ops.begin(), plan.vector_ops.end(), [&](const VectorOpShape& s) {
      return s.op == op && s.dtype == dtype && s.elements() * dtype_bytes(dtype) >= 2 * llc;
    });
  };
  const auto full = cpu_plan(device, Suite::full);
  const auto quick = cpu_plan(device, Suite::quick);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    for (const char* op : {"reorder_blocked", "reorder_plain"}) {
      EXPECT_EQ(past_caches(full, op, dtype), 1) << op;
      EXPECT_EQ(past_caches(quick, op, dtype), 0) << op;
    }
    for (const char* op : {"relu", "gelu", "add", "softmax"}) EXPECT_EQ(past_caches(full, op, dtype), 0) << op;
  }
}

TEST(CpuPlan, ThePaddedAddLeavesHalfOfTheLastChannelBlockOfThisIsaEmpty) {
  const auto padded_rows = [](const DeviceDescription& device) {
    const auto plan = cpu_plan(device, Suite::full);
    const auto it = std::find_if(plan.vector_ops.begin(), plan.vector_ops.end(),
                                 [](const VectorOpShape& s) { return s.op == "add_padded"; });
    return it == plan.vector_ops.end() ? std::int64_t{0} : it->rows;
  };
  DeviceDescription device = this_kind_of_vm();
  EXPECT_EQ(padded_rows(device), 24);  // blocks of 16 with AVX-512
  device.properties["onednn_isa"] = "avx2_vnni";
  EXPECT_EQ(padded_rows(device), 12);  // blocks of 8
  // Without oneDNN's ISA, the CPU's own flags.
  device.properties.erase("onednn_isa");
  device.properties["isa"] = {{"avx512f", true}};
  EXPECT_EQ(padded_rows(device), 24);
  device.properties["isa"] = {{"avx512f", false}, {"avx2", true}};
  EXPECT_EQ(padded_rows(device), 12);
}

TEST(CpuPlan, DefaultSuiteLooksAgainAtShortPoints) {
  const auto quick = cpu_plan(this_kind_of_vm(), Suite::quick);
  const auto full = cpu_plan(this_kind_of_vm(), Suite::full);
  EXPECT_EQ(quick.revisit_max_s, 0.0);  // 30 s leave no time for a second look
  EXPECT_GT(full.revisit_max_s, 0.0);
  EXPECT_LE(full.revisit_max_s, 0.05);  // the long points average over busy spells anyway
  EXPECT_GE(full.revisit_rule.min_samples, 3);
  EXPECT_LE(full.revisit_rule.budget_s, full.conv_rule.budget_s);
  // The last look goes to the best layers and to those far behind a twin in another layout, and
  // to the decode- and prefill-like products (128 rows and fewer).
  EXPECT_EQ(full.last_look_gemm_rows, 128);
  EXPECT_GT(full.gemm_last_look_wait_s, 0.0);
  EXPECT_LE(full.gemm_last_look_wait_s, full.quiet_wait_s);  // inside the goal's slack
  EXPECT_GT(full.gemm_last_look_within, 0.0);
  EXPECT_LT(full.gemm_last_look_within, 0.13);  // the slow state's slowdown of the sentinel
  EXPECT_GT(full.final_look_within, 0.0);
  EXPECT_GT(full.twin_look_gap, 0.0);
  EXPECT_LT(full.twin_look_gap, 0.5);
  EXPECT_EQ(quick.twin_look_gap, 0.0);
}

TEST(CpuPlan, SweepFollowsTheCache) {
  auto device = this_kind_of_vm();
  device.levels = {{"L1", 64 * kKiB}, {"L2", 2 * kMiB}, {"L3", 32 * kMiB}, {"DRAM", 16 * kGiB}};
  const auto plan = cpu_plan(device, Suite::quick);
  EXPECT_GT(plan.stream_bytes.back(), 4 * 32 * kMiB);
  EXPECT_LT(plan.stream_bytes.back(), 1 * kGiB);
}

INSTANTIATE_TEST_SUITE_P(Suites, CpuPlanTest, ::testing::Values(Suite::quick, Suite::full));

}  // namespace
}  // namespace truepeak
