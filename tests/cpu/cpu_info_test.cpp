#include "kernels/cpu/cpu_info.hpp"

#include "kernels/cpu/clock.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.hpp"

namespace truepeak::cpu {
namespace {

TEST(CpuInfo, ParsesFirstProcessorBlock) {
  const char* text =
      "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
      "model name\t: Intel(R) Xeon(R) Test\n"
      "cpu MHz\t\t: 2300.000\nflags\t\t: fpu avx2 fma avx512f avx512_bf16\n\n"
      "processor\t: 1\nmodel name\t: Other\ncpu MHz\t\t: 999.0\nflags\t\t: fpu\n";
  const auto parsed = parse_cpuinfo(text);
  EXPECT_EQ(parsed.model_name, "Intel(R) Xeon(R) Test");
  EXPECT_EQ(parsed.vendor, "GenuineIntel");
  EXPECT_EQ(parsed.family, 6);
  EXPECT_EQ(parsed.model, 143);
  ASSERT_TRUE(parsed.mhz.has_value());
  EXPECT_DOUBLE_EQ(*parsed.mhz, 2300.0);
  EXPECT_TRUE(parsed.flags.count("avx512_bf16"));
  EXPECT_TRUE(parsed.flags.count("fma"));
  EXPECT_FALSE(parsed.flags.count("amx_tile"));
}

TEST(CpuInfo, LeavesAnUnreadableFamilyUnset) {
  const auto parsed = parse_cpuinfo("processor\t: 0\ncpu family\t: x86\nmodel\t\t:\n");
  EXPECT_FALSE(parsed.family.has_value());
  EXPECT_FALSE(parsed.model.has_value());
}

TEST(CpuInfo, ParsesMeminfo) {
  EXPECT_EQ(parse_meminfo("MemTotal:       24560332 kB\nMemFree: 1 kB\n"),
            std::int64_t{24560332} * 1024);
  EXPECT_FALSE(parse_meminfo("MemFree: 1 kB\n").has_value());
}

TEST(CpuInfo, ParsesCpuLists) {
  EXPECT_EQ(parse_cpu_list("0-1\n"), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_cpu_list("0-2,8,10-11"), (std::vector<int>{0, 1, 2, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("3"), (std::vector<int>{3}));
  EXPECT_THROW(parse_cpu_list("a-b"), Error);
  EXPECT_THROW(parse_cpu_list("4-2"), Error);
}

TEST(CpuInfo, ParsesCacheSizes) {
  EXPECT_EQ(parse_cache_size("48K\n"), 48 * 1024);
  EXPECT_EQ(parse_cache_size("266240K"), std::int64_t{266240} * 1024);
  EXPECT_EQ(parse_cache_size("2M"), 2 * 1024 * 1024);
  EXPECT_THROW(parse_cache_size("K"), Error);
  EXPECT_THROW(parse_cache_size(""), Error);
}

TEST(CpuInfo, ReadsThisMachine) {
  const auto info = read_cpu_info(0);
  EXPECT_GE(info.logical_cpus, 1);
  EXPECT_GE(info.physical_cores, 1);
  EXPECT_LE(info.physical_cores, info.logical_cpus);
  ASSERT_TRUE(info.memory_bytes.has_value());
  EXPECT_GT(*info.memory_bytes, 0);
}

TEST(CpuClock, TheKernelChecksItsSumsAndTimesAPlausibleClock) {
#if defined(__x86_64__) || defined(__aarch64__)
  auto kernel = make_clock_kernel(2);
  kernel->check();
  double best = 0;
  for (int i = 0; i < 5; ++i) best = std::max(best, kernel->flops() / kernel->run_s());
  // No core of these ISAs runs a dependent add chain below 200 MHz or above 7 GHz.
  EXPECT_GT(best, 200e6);
  EXPECT_LT(best, 7e9);
#else
  EXPECT_THROW(make_clock_kernel(2), Unsupported);
#endif
}

}  // namespace
}  // namespace truepeak::cpu
