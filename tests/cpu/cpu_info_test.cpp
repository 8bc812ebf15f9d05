#include "kernels/cpu/cpu_info.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace truepeak::cpu {
namespace {

TEST(CpuInfo, ParsesFirstProcessorBlock) {
  const char* text =
      "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Test\n"
      "cpu MHz\t\t: 2300.000\nflags\t\t: fpu avx2 fma avx512f avx512_bf16\n\n"
      "processor\t: 1\nmodel name\t: Other\ncpu MHz\t\t: 999.0\nflags\t\t: fpu\n";
  const auto parsed = parse_cpuinfo(text);
  EXPECT_EQ(parsed.model_name, "Intel(R) Xeon(R) Test");
  ASSERT_TRUE(parsed.mhz.has_value());
  EXPECT_DOUBLE_EQ(*parsed.mhz, 2300.0);
  EXPECT_TRUE(parsed.flags.count("avx512_bf16"));
  EXPECT_TRUE(parsed.flags.count("fma"));
  EXPECT_FALSE(parsed.flags.count("amx_tile"));
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

}  // namespace
}  // namespace truepeak::cpu
