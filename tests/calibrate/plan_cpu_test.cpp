// The CPU plan: the sweep reaches DRAM and every level; the GEMM and convolution grids cover the
// ranges they are meant to, every kind of layer and product present, with measured points around
// every shape in those ranges as the estimator looks them up, within a point budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <string>

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

// The estimator's coordinates of a product (estimate/rates.cpp): log2 of batch, rows, columns and
// depth; of a convolution, its implicit GEMM's (groups, output positions, output channels a
// group, inputs a group times the window) and its stride, two units a factor of two. A
// convolution's class: 0 dense, 1 grouped, 2 depthwise.
using Coords = std::vector<double>;

Coords gemm_coords(const GemmShape& s) {
  return {std::log2(static_cast<double>(s.batch)), std::log2(static_cast<double>(s.m)),
          std::log2(static_cast<double>(s.n)), std::log2(static_cast<double>(s.k))};
}

int conv_class(const ConvShape& s) {
  if (s.groups == 1) return 0;
  return s.groups == s.c && s.groups == s.k ? 2 : 1;
}

Coords conv_coords(const ConvShape& s) {
  const auto l2 = [](std::int64_t v) { return std::log2(static_cast<double>(v)); };
  return {l2(s.groups), l2(s.n * s.out_h() * s.out_w()), l2(s.k / s.groups),
          l2(s.c / s.groups * s.r * s.s), 2 * l2(s.stride)};
}

struct Neighbourhood {
  bool inside = true;  // inside the box the points span: looked up between them, never clamped
  double nearest = std::numeric_limits<double>::infinity();  // log2 units
};

Neighbourhood neighbourhood(const std::vector<Coords>& points, const Coords& query) {
  Neighbourhood out;
  if (points.empty()) return {false, out.nearest};
  for (std::size_t d = 0; d < query.size(); ++d) {
    double lo = points.front()[d], hi = lo;
    for (const auto& p : points) {
      lo = std::min(lo, p[d]);
      hi = std::max(hi, p[d]);
    }
    if (query[d] < lo - 1e-9 || query[d] > hi + 1e-9) out.inside = false;
  }
  for (const auto& p : points) {
    double d2 = 0;
    for (std::size_t d = 0; d < query.size(); ++d) d2 += (p[d] - query[d]) * (p[d] - query[d]);
    out.nearest = std::min(out.nearest, std::sqrt(d2));
  }
  return out;
}

// Powers of two from `lo` to `hi` and, with `midpoints`, the 1.5x values between them.
std::vector<std::int64_t> ladder(std::int64_t lo, std::int64_t hi, bool midpoints = true) {
  std::vector<std::int64_t> out;
  for (std::int64_t v = lo; v <= hi; v *= 2) {
    out.push_back(v);
    if (midpoints && 3 * v / 2 <= hi) out.push_back(3 * v / 2);
  }
  return out;
}

ConvShape layer(DType dtype, std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t k,
                std::int64_t rs, std::int64_t stride, std::int64_t groups) {
  ConvShape s;
  s.dtype = dtype;
  s.n = n;
  s.c = c;
  s.h = s.w = hw;
  s.k = k;
  s.r = s.s = rs;
  s.stride = stride;
  s.pad = rs / 2;
  s.groups = groups;
  return s;
}

// Layers no model was named for, over the ranges the grid is meant to cover: spatial sizes of 7
// to 112 in steps of sqrt(2), channels of 16 to 2048 in powers of two and their 1.5x midpoints,
// where spatial size times channels lies between 896 and 14336 (a layer's width for its place in
// a network); dense 1x1s, 3x3s and 5x5s (those up to 3584) with 1/4 to 4 times the channels out
// (a strided one at least as many), depthwise 3x3s, 5x5s and 7x7s from 1792 up, grouped 3x3s of 4
// to 64 groups of 4 to 64 channels from 3584 up; stride 1 and 2 (from 14x14).
std::vector<ConvShape> generic_layers(DType dtype, std::int64_t batch) {
  std::vector<ConvShape> out;
  for (int i = 0; i <= 8; ++i) {
    const auto hw = static_cast<std::int64_t>(std::lround(7 * std::pow(2.0, i / 2.0)));
    for (const auto c : ladder(16, 2048)) {
      const std::int64_t width = hw * c;
      for (const std::int64_t stride : {1, 2}) {
        if (stride == 2 && hw < 14) continue;
        if (width >= 896 && width <= 14336) {
          for (const std::int64_t rs : {1, 3, 5}) {
            if (rs == 5 && width > 3584) continue;
            for (const std::int64_t k : {c / 4, c / 2, c, 2 * c, 4 * c})
              if (k >= 16 && k <= 2048 && (stride == 1 || k >= c))
                out.push_back(layer(dtype, batch, c, hw, k, rs, stride, 1));
          }
        }
        if (width >= 1792 && width <= 14336)
          for (const std::int64_t rs : {3, 5, 7})
            out.push_back(layer(dtype, batch, c, hw, c, rs, stride, c));
        if (width >= 3584 && width <= 14336)
          for (const auto group_width : ladder(4, 64))
            if (c % group_width == 0 && c / group_width >= 4 && c / group_width <= 64)
              out.push_back(layer(dtype, batch, c, hw, c, 3, stride, c / group_width));
      }
    }
  }
  return out;
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
  // And every such layer is.
  for (const auto& [shape, layout] : plan.conv) {
    if (shape.n != 1 || layout != ConvLayout::blocked || shape.weight_bytes() < 256.0 * kKiB)
      continue;
    EXPECT_EQ(std::count(plan.conv_cold.begin(), plan.conv_cold.end(), std::pair{shape, layout}), 1)
        << shape.str();
  }
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

TEST(CpuPlan, DefaultSuiteMeasuresLinearLayersAsConvolutionsOver1x1WithColdWeightsToo) {
  const Plan full = cpu_plan(this_kind_of_vm(), Suite::full);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    const auto classifier = [&](const auto& point) {
      const ConvShape& s = point.first;
      return s.dtype == dtype && s.h == 1 && s.w == 1 && s.r == 1 && s.n == 1 && s.c >= 4096;
    };
    EXPECT_TRUE(std::any_of(full.conv.begin(), full.conv.end(), classifier)) << to_string(dtype);
    EXPECT_TRUE(std::any_of(full.conv_cold.begin(), full.conv_cold.end(), classifier))
        << to_string(dtype);
  }
}

TEST(CpuPlan, DefaultSuiteMeasuresBatchedLinearLayersBlocked) {
  const Plan full = cpu_plan(this_kind_of_vm(), Suite::full);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    for (const std::int64_t n : {8, 32}) {
      EXPECT_TRUE(std::any_of(full.conv.begin(), full.conv.end(),
                              [&](const auto& point) {
                                const ConvShape& s = point.first;
                                return s.dtype == dtype && s.n == n && s.h == 1 && s.w == 1 &&
                                       s.r == 1 && s.c >= 1024 &&
                                       point.second == ConvLayout::blocked;
                              }))
          << to_string(dtype) << " n=" << n;
    }
    // One whose weights outgrow any cache (128 MiB or more), past batch 1.
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

TEST_P(CpuPlanTest, GemmGridHasEveryKindOfProduct) {
  const Plan plan = cpu_plan(this_kind_of_vm(), GetParam());
  for (const DType dtype : {DType::f32, DType::bf16, DType::int8}) {
    // Squares from tiny to the dtype's peak.
    EXPECT_TRUE(has_gemm(plan, dtype, [](const GemmShape& s) {
      return s.m == s.n && s.n == s.k && s.m <= 64 && s.batch == 1;
    })) << to_string(dtype);
    EXPECT_TRUE(has_gemm(plan, dtype, [](const GemmShape& s) {
      return s.m == s.n && s.n == s.k && s.m >= 2048 && s.batch == 1;
    })) << to_string(dtype);
    // A single row against weights of 16 MiB or more in f32 (memory bound).
    EXPECT_TRUE(has_gemm(plan, dtype, [](const GemmShape& s) {
      return s.m == 1 && s.batch == 1 && s.n * s.k >= 4096 * 4096;
    })) << to_string(dtype);
    // Small K, and batched products.
    EXPECT_TRUE(has_gemm(plan, dtype, [](const GemmShape& s) { return s.k <= 64 && s.m >= 1024; }));
    EXPECT_TRUE(has_gemm(plan, dtype, [](const GemmShape& s) { return s.batch >= 8; }));
  }
  for (const auto& s : plan.gemm) EXPECT_TRUE(s.m > 0 && s.n > 0 && s.k > 0 && s.batch > 0);
}

TEST(CpuPlan, DefaultGemmGridRunsFromSkinnyToSquareOnRegularLadders) {
  const Plan full = cpu_plan(this_kind_of_vm(), Suite::full);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    std::set<std::int64_t> squares, rows, sizes, batches, widths, tokens;
    bool wide = false, decode = false;
    for (const auto& s : full.gemm) {
      if (s.dtype != dtype) continue;
      if (s.batch == 1 && s.m == s.n && s.n == s.k) squares.insert(s.m);
      if (s.batch == 1 && s.m <= 64 && s.m < s.n && s.n <= 8192) {
        rows.insert(s.m);
        sizes.insert(s.n);
        sizes.insert(s.k);
      }
      wide = wide || (s.batch == 1 && s.n >= 32768);
      if (s.batch > 1) {
        batches.insert(s.batch);
        if (s.m == 1) {
          decode = true;
          widths.insert(std::min(s.n, s.k));
        } else {
          tokens.insert(s.m);
        }
      }
    }
    // Squares of every power of two from 64 to 4096.
    EXPECT_EQ(squares, (std::set<std::int64_t>{64, 128, 256, 512, 1024, 2048, 4096}));
    // Rows from 1 up, at most 4x apart; widths and depths from 1024 to 8192, at most 2x apart;
    // and a wider output (a vocabulary-sized head).
    ASSERT_FALSE(rows.empty());
    EXPECT_EQ(*rows.begin(), 1);
    EXPECT_GE(*rows.rbegin(), 64);
    for (auto it = std::next(rows.begin()); it != rows.end(); ++it)
      EXPECT_LE(*it, 4 * *std::prev(it)) << to_string(dtype) << " rows " << *it;
    ASSERT_FALSE(sizes.empty());
    EXPECT_LE(*sizes.begin(), 1024);
    EXPECT_GE(*sizes.rbegin(), 8192);
    for (auto it = std::next(sizes.begin()); it != sizes.end(); ++it)
      EXPECT_LE(*it, 2 * *std::prev(it)) << to_string(dtype) << " size " << *it;
    EXPECT_TRUE(wide) << to_string(dtype);
    // Batched products over several batch counts, head widths and sequence lengths, a decode
    // step's (one row) among them.
    EXPECT_TRUE(decode) << to_string(dtype);
    EXPECT_GE(batches.size(), 3u) << to_string(dtype);
    EXPECT_GE(widths.size(), 3u) << to_string(dtype);
    EXPECT_GE(tokens.size(), 3u) << to_string(dtype);
  }
}

TEST(CpuPlan, DefaultGemmGridLeavesNoProductFarFromMeasuredPoints) {
  // Products no model was named for: rows of 1 to 256 against weights of 1024 to 8192 columns
  // and rows (powers of two and their 1.5x midpoints, at most 4:1), and attention's batched
  // products over 8 to 128 heads x batch, head widths of 32 to 128 and 128 to 2048 tokens (a
  // prefill's scores and context) or 256 to 4096 cached ones (a decode step's). Each lies inside
  // the box of the measured points, so the estimator interpolates rather than clamps, with a
  // measured point within a factor of 8 (3 units) for a linear layer and 16 for attention.
  const Plan full = cpu_plan(this_kind_of_vm(), Suite::full);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    std::vector<Coords> points;
    for (const auto& s : full.gemm)
      if (s.dtype == dtype) points.push_back(gemm_coords(s));
    const auto check = [&](const GemmShape& q, double within) {
      const auto n = neighbourhood(points, gemm_coords(q));
      EXPECT_TRUE(n.inside) << q.str();
      EXPECT_LE(n.nearest, within) << q.str();
    };
    for (const auto m : ladder(1, 256, false))
      for (const auto n : ladder(1024, 8192))
        for (const auto k : ladder(1024, 8192))
          if (std::max(n, k) <= 4 * std::min(n, k)) check({dtype, m, n, k, 1}, 3.0);
    for (const auto batch : ladder(8, 128))
      for (const auto width : ladder(32, 128)) {
        for (const auto t : ladder(128, 2048)) {
          check({dtype, t, t, width, batch}, 4.0);
          check({dtype, t, width, t, batch}, 4.0);
        }
        for (const auto t : ladder(256, 4096)) {
          check({dtype, 1, t, width, batch}, 4.0);
          check({dtype, 1, width, t, batch}, 4.0);
        }
      }
  }
}

TEST_P(CpuPlanTest, ConvGridHasEveryKindInBothLayouts) {
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
      if (shape.dtype != dtype || layout != ConvLayout::any || conv_class(shape) == 1) continue;
      EXPECT_TRUE(has(dtype, [&, s0 = shape](const ConvShape& s, ConvLayout l) {
        return l == ConvLayout::blocked && s == s0;
      })) << shape.str();
    }
    EXPECT_FALSE(has(dtype, [](const ConvShape& s, ConvLayout l) {
      return conv_class(s) == 1 && l == ConvLayout::blocked;
    }));
    // Both suites: 1x1s, 3x3s of stride 1 and 2, depthwise layers, a 7x7 stem over an image, a
    // linear layer as a 1x1 over 1x1, and a larger batch.
    EXPECT_TRUE(has(dtype, [](const ConvShape& s, ConvLayout) {
      return conv_class(s) == 0 && s.r == 1 && s.h > 1;
    }));
    for (const std::int64_t stride : {1, 2})
      EXPECT_TRUE(has(dtype, [&](const ConvShape& s, ConvLayout) {
        return conv_class(s) == 0 && s.r == 3 && s.stride == stride && s.c > 3;
      })) << stride;
    EXPECT_TRUE(has(dtype, [](const ConvShape& s, ConvLayout) { return conv_class(s) == 2; }));
    EXPECT_TRUE(has(dtype, [](const ConvShape& s, ConvLayout) {
      return s.c == 3 && s.r == 7 && s.stride == 2;
    }));
    EXPECT_TRUE(has(dtype, [](const ConvShape& s, ConvLayout) { return s.h == 1 && s.r == 1; }));
    EXPECT_TRUE(has(dtype, [](const ConvShape& s, ConvLayout) { return s.n == 1; }));
    EXPECT_TRUE(has(dtype, [](const ConvShape& s, ConvLayout) { return s.n >= 8 && s.h > 1; }));
  }
  EXPECT_TRUE(
      has(DType::f32, [](const ConvShape&, ConvLayout l) { return l == ConvLayout::nhwc; }));
  for (const auto& [shape, layout] : plan.conv) {
    EXPECT_GT(shape.out_h(), 0) << shape.str();
    EXPECT_EQ(shape.c % shape.groups, 0) << shape.str();
    EXPECT_EQ(shape.k % shape.groups, 0) << shape.str();
  }
}

TEST(CpuPlan, DefaultConvGridCoversTheRanges) {
  const Plan full = cpu_plan(this_kind_of_vm(), Suite::full);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    std::array<std::set<std::int64_t>, 3> kernels, strides, batches;
    std::set<std::int64_t> channels, spatial, group_widths;
    for (const auto& [s, layout] : full.conv) {
      if (s.dtype != dtype) continue;
      const int cls = conv_class(s);
      kernels[cls].insert(s.r);
      strides[cls].insert(s.stride);
      batches[cls].insert(s.n);
      if (cls == 1) group_widths.insert(s.c / s.groups);
      // Past the image stems (3 channels at 224x224) and the linear layers (1x1 over 1x1).
      if (s.c > 3 && s.h > 1) {
        channels.insert(s.c);
        channels.insert(s.k);
        spatial.insert(s.h);
      }
    }
    EXPECT_EQ(kernels[0], (std::set<std::int64_t>{1, 3, 5, 7})) << to_string(dtype);
    EXPECT_EQ(kernels[2], (std::set<std::int64_t>{3, 5, 7})) << to_string(dtype);
    for (int cls = 0; cls < 3; ++cls) {
      EXPECT_EQ(strides[cls], (std::set<std::int64_t>{1, 2})) << to_string(dtype) << " " << cls;
      EXPECT_EQ(*batches[cls].begin(), 1) << to_string(dtype) << " " << cls;
      EXPECT_GE(*batches[cls].rbegin(), 8) << to_string(dtype) << " " << cls;
    }
    EXPECT_EQ(*channels.begin(), 16);
    EXPECT_EQ(*channels.rbegin(), 2048);
    EXPECT_EQ(*spatial.begin(), 7);
    EXPECT_EQ(*spatial.rbegin(), 112);
    ASSERT_FALSE(group_widths.empty());
    EXPECT_LE(*group_widths.begin(), 4);
    EXPECT_EQ(*group_widths.rbegin(), 64);
    // Powers of two only: no value picked to hit a network.
    const auto power_of_two = [](std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; };
    for (const auto c : channels) EXPECT_TRUE(power_of_two(c)) << c;
    for (const auto hw : spatial) EXPECT_TRUE(power_of_two(hw / 7) && hw % 7 == 0) << hw;
  }
}

TEST(CpuPlan, DefaultConvGridLeavesNoLayerFarFromMeasuredPoints) {
  // Every generic layer (generic_layers), at batch 1 and 16, lies inside the box of its class's
  // measured points in the estimator's coordinates, so it is interpolated rather than clamped,
  // with a measured point of its class near: within 3.5 units at batch 1 for a dense layer, 3.75
  // for a grouped one and 3 for a depthwise one (5, 4.5 and 3.5 at batch 16). The grid spreads
  // its points rather than bunching them where one network's layers are.
  const std::array<double, 3> within_batch_1 = {3.5, 3.75, 3.0};
  const std::array<double, 3> within_batch_16 = {5.0, 4.5, 3.5};
  const Plan full = cpu_plan(this_kind_of_vm(), Suite::full);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    std::array<std::vector<Coords>, 3> points;
    for (const auto& [s, layout] : full.conv)
      if (s.dtype == dtype) points[conv_class(s)].push_back(conv_coords(s));
    for (const std::int64_t batch : {1, 16}) {
      const auto layers = generic_layers(dtype, batch);
      std::array<int, 3> count{};
      for (const auto& q : layers) {
        const int cls = conv_class(q);
        ++count[cls];
        const auto n = neighbourhood(points[cls], conv_coords(q));
        EXPECT_TRUE(n.inside) << q.str();
        EXPECT_LE(n.nearest, (batch == 1 ? within_batch_1 : within_batch_16)[cls]) << q.str();
      }
      for (const int c : count) EXPECT_GT(c, 300);
    }
  }
}

TEST_P(CpuPlanTest, NoPointIsMeasuredTwice) {
  const Plan plan = cpu_plan(this_kind_of_vm(), GetParam());
  std::set<std::string> conv, conv_cold, gemm, gemm_cold, vector_ops;
  for (const auto& [s, l] : plan.conv)
    EXPECT_TRUE(conv.insert(s.str() + " " + std::string(to_string(l))).second) << s.str();
  for (const auto& [s, l] : plan.conv_cold)
    EXPECT_TRUE(conv_cold.insert(s.str() + " " + std::string(to_string(l))).second) << s.str();
  for (const auto& s : plan.gemm) EXPECT_TRUE(gemm.insert(s.str()).second) << s.str();
  for (const auto& s : plan.gemm_cold) EXPECT_TRUE(gemm_cold.insert(s.str()).second) << s.str();
  for (const auto& s : plan.vector_ops) EXPECT_TRUE(vector_ops.insert(s.str()).second) << s.str();
}

TEST_P(CpuPlanTest, GridsStayWithinTheirPointBudgets) {
  // The suites' goals (3 minutes, 30 s on 2 cores) hold this many points, cold-weight repeats
  // included; a point costs about the same whatever its size, its warm-up, samples and second
  // look mostly fixed.
  const Plan plan = cpu_plan(this_kind_of_vm(), GetParam());
  const bool quick = GetParam() == Suite::quick;
  EXPECT_LE(plan.conv.size() + plan.conv_cold.size(), quick ? 40u : 250u);
  EXPECT_LE(plan.gemm.size() + plan.gemm_cold.size(), quick ? 32u : 115u);
  EXPECT_GE(plan.conv.size(), quick ? 20u : 150u);
  EXPECT_GE(plan.gemm.size(), quick ? 20u : 60u);
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
  // A single row's and, in the default suite, 64 rows' products have cold twins.
  for (const std::int64_t m : {1, 64}) {
    if (m > 1 && GetParam() == Suite::quick) continue;
    for (const DType dtype : {DType::f32, DType::bf16})
      EXPECT_TRUE(std::any_of(plan.gemm_cold.begin(), plan.gemm_cold.end(),
                              [&](const GemmShape& s) { return s.m == m && s.dtype == dtype; }))
          << m << " " << to_string(dtype);
  }
  // With a 32 MiB cache, weights of 64 MiB and more are cold without copies: no second point.
  DeviceDescription small = this_kind_of_vm();
  small.levels[2].bytes = 32 * kMiB;
  const Plan small_plan = cpu_plan(small, GetParam());
  const GemmShape f32_4k{DType::f32, 1, 4096, 4096, 1}, bf16_4k{DType::bf16, 1, 4096, 4096, 1};
  EXPECT_EQ(std::count(small_plan.gemm.begin(), small_plan.gemm.end(), f32_4k), 1);
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
        EXPECT_EQ(std::count(plan.vector_ops.begin(), plan.vector_ops.end(), shape), 1)
            << shape.str();
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
    return std::count_if(
        plan.vector_ops.begin(), plan.vector_ops.end(), [&](const VectorOpShape& s) {
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
    for (const char* op : {"relu", "gelu", "add", "softmax"})
      EXPECT_EQ(past_caches(full, op, dtype), 0) << op;
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
