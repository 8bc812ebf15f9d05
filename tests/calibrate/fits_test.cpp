#include <gtest/gtest.h>

#include "calibrate/fits.hpp"

namespace truepeak {
namespace {

TEST(LatencyBandwidthFit, RecoversExactLine) {
  std::vector<TransferSample> pts;
  for (std::int64_t b = 4096; b <= (1 << 30); b *= 4) pts.push_back({b, 10e-6 + double(b) / 25e9});
  const auto fit = fit_latency_bandwidth(pts);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->latency_s, 10e-6, 1e-9);
  EXPECT_NEAR(fit->Bps, 25e9, 25e9 * 1e-6);
}

TEST(LatencyBandwidthFit, SmallPointsStillSetTheLatency) {
  // 5% noise on each point: an unweighted fit would let the large sizes swamp the intercept.
  std::vector<TransferSample> pts;
  double sign = 1;
  for (std::int64_t b = 4096; b <= (1 << 30); b *= 2) {
    pts.push_back({b, (5e-6 + double(b) / 50e9) * (1 + 0.05 * sign)});
    sign = -sign;
  }
  const auto fit = fit_latency_bandwidth(pts);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->latency_s, 5e-6, 1e-6);
  EXPECT_NEAR(fit->Bps, 50e9, 5e9);
}

TEST(LatencyBandwidthFit, NeedsTwoSizes) {
  EXPECT_FALSE(fit_latency_bandwidth({{4096, 1e-5}, {4096, 1.1e-5}}).has_value());
  EXPECT_FALSE(fit_latency_bandwidth({}).has_value());
}

TEST(LevelBandwidths, EachLevelTakesItsOwnPoints) {
  const std::vector<MemoryLevel> levels = {{"L1", 64 * 1024}, {"L2", 4 << 20}, {"DRAM", std::int64_t(16) << 30}};
  std::vector<MemoryPoint> sweep = {
      {"triad", 16 * 1024, 400e9, 390e9},    // L1
      {"triad", 32 * 1024, 420e9, 400e9},    // L1 (best)
      {"triad", 96 * 1024, 300e9, 290e9},    // between: neither level's clean range
      {"triad", 1 << 20, 200e9, 190e9},      // L2
      {"triad", 8 << 20, 90e9, 80e9},        // between L2 and 4x L2
      {"triad", 64 << 20, 20e9, 19e9},       // DRAM
      {"triad", 256 << 20, 21e9, 19e9},      // DRAM (best)
      {"copy", 256 << 20, 99e9, 99e9},       // other kernel: ignored
  };
  const auto lv = level_bandwidths(levels, sweep, "triad");
  ASSERT_EQ(lv.size(), 3u);
  EXPECT_EQ(lv[0].name, "L1");
  EXPECT_DOUBLE_EQ(lv[0].Bps, 420e9);
  EXPECT_DOUBLE_EQ(lv[1].Bps, 200e9);
  EXPECT_EQ(lv[2].name, "DRAM");
  EXPECT_DOUBLE_EQ(lv[2].Bps, 21e9);
}

TEST(LevelBandwidths, DeviceMemoryFallsBackToTheLargestPoint) {
  const std::vector<MemoryLevel> levels = {{"L2", 50 << 20}, {"HBM", std::nullopt}};
  const std::vector<MemoryPoint> sweep = {{"triad", 1 << 20, 9e12, 9e12}, {"triad", 100 << 20, 3e12, 3e12}};
  const auto lv = level_bandwidths(levels, sweep, "triad");
  ASSERT_EQ(lv.size(), 2u);
  EXPECT_DOUBLE_EQ(lv[1].Bps, 3e12);
}

TEST(LevelBandwidths, NoPointsNoLevels) {
  EXPECT_TRUE(level_bandwidths({{"L1", 1024}}, {}, "triad").empty());
}

}  // namespace
}  // namespace truepeak
