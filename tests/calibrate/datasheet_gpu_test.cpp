#include <gtest/gtest.h>

#include "calibrate/datasheet.hpp"

namespace truepeak {
namespace {

DeviceDescription gpu(const std::string& name, double memory_gb = 0) {
  DeviceDescription d;
  d.id = "cuda:0";
  d.kind = "gpu";
  d.name = name;
  if (memory_gb > 0) d.memory_bytes = static_cast<std::int64_t>(memory_gb * 1e9);
  return d;
}

std::string source_of(const std::string& name, double memory_gb = 0) {
  return gpu_datasheet(gpu(name, memory_gb)).source;
}

TEST(GpuDatasheet, H200IsTheSxmPartWithDensePeaks) {
  const Datasheet d = gpu_datasheet(gpu("NVIDIA H200", 150));
  EXPECT_NE(d.source.find("vendor datasheet: NVIDIA H200 SXM"), std::string::npos) << d.source;
  EXPECT_DOUBLE_EQ(d.flops_per_s.at("bf16"), 989.4e12);  // dense, not the 1979 sparse figure
  EXPECT_DOUBLE_EQ(d.flops_per_s.at("fp8"), 1978.9e12);
  EXPECT_DOUBLE_EQ(d.flops_per_s.at("tf32"), 494.7e12);
  EXPECT_DOUBLE_EQ(d.flops_per_s.at("f32"), 66.9e12);
  EXPECT_DOUBLE_EQ(*d.memory_Bps, 4.8e12);
  EXPECT_DOUBLE_EQ(d.vector_flops_per_s.at("f64"), 33.5e12);
}

TEST(GpuDatasheet, NamesAsTheDriverReportsThem) {
  EXPECT_NE(source_of("NVIDIA H100 80GB HBM3").find("H100 SXM"), std::string::npos);
  EXPECT_NE(source_of("NVIDIA H100 PCIe").find("H100 PCIe"), std::string::npos);
  EXPECT_NE(source_of("NVIDIA H100 NVL").find("H100 NVL"), std::string::npos);
  EXPECT_NE(source_of("NVIDIA H200 NVL").find("H200 NVL"), std::string::npos);
  EXPECT_NE(source_of("NVIDIA A100-SXM4-40GB", 42.5).find("A100 40GB SXM"), std::string::npos);
  EXPECT_NE(source_of("NVIDIA A100-SXM4-80GB", 85).find("A100 80GB SXM"), std::string::npos);
  EXPECT_NE(source_of("NVIDIA A100 80GB PCIe", 85).find("A100 80GB PCIe"), std::string::npos);
  EXPECT_NE(source_of("NVIDIA A100-PCIE-40GB", 42.5).find("A100 40GB PCIe"), std::string::npos);
  EXPECT_NE(source_of("NVIDIA A10").find("NVIDIA A10 "), std::string::npos);
  EXPECT_NE(source_of("NVIDIA L4").find("NVIDIA L4 "), std::string::npos);
  EXPECT_NE(source_of("NVIDIA L40S").find("L40S"), std::string::npos);
  EXPECT_NE(source_of("NVIDIA L40").find("NVIDIA L40 "), std::string::npos);
  EXPECT_NE(source_of("Tesla T4").find("T4"), std::string::npos);
  EXPECT_NE(source_of("Tesla V100-SXM2-16GB").find("V100 SXM2"), std::string::npos);
  EXPECT_NE(source_of("Tesla V100-PCIE-32GB").find("V100 PCIe"), std::string::npos);
  EXPECT_NE(source_of("NVIDIA GeForce RTX 4090").find("RTX 4090"), std::string::npos);
  EXPECT_NE(source_of("NVIDIA B200").find("B200"), std::string::npos);
}

TEST(GpuDatasheet, DtypesAPartDoesNotHaveAreAbsent) {
  const Datasheet a100 = gpu_datasheet(gpu("NVIDIA A100-SXM4-80GB", 85));
  EXPECT_EQ(a100.flops_per_s.count("fp8"), 0u);
  EXPECT_DOUBLE_EQ(a100.flops_per_s.at("bf16"), 312e12);
  EXPECT_DOUBLE_EQ(*a100.memory_Bps, 2039e9);
  const Datasheet t4 = gpu_datasheet(gpu("Tesla T4"));
  EXPECT_EQ(t4.flops_per_s.count("bf16"), 0u);
  EXPECT_DOUBLE_EQ(t4.flops_per_s.at("int8"), 130e12);
}

TEST(GpuDatasheet, UnknownGpuIsEstimatedFromItsFacts) {
  DeviceDescription d = gpu("NVIDIA Imaginary X1");
  d.properties = {{"compute_capability", "9.0"},
                  {"sms", 132},
                  {"max_sm_clock_mhz", 1980},
                  {"memory_bus_width_bits", 5120},
                  {"memory_clock_mhz", 2619}};
  const Datasheet ds = gpu_datasheet(d);
  EXPECT_NE(ds.source.find("estimated from"), std::string::npos) << ds.source;
  EXPECT_NE(ds.source.find("Imaginary"), std::string::npos);
  EXPECT_NEAR(ds.flops_per_s.at("f32"), 132 * 1980e6 * 256, 1e6);
  EXPECT_NEAR(ds.flops_per_s.at("bf16"), 132 * 1980e6 * 4096, 1e6);
  EXPECT_NEAR(ds.flops_per_s.at("fp8"), 2 * ds.flops_per_s.at("bf16"), 1e6);
  EXPECT_NEAR(*ds.memory_Bps, 2 * 2619e6 * 640, 1e3);  // ~3.35 TB/s, as an H100 SXM
}

TEST(GpuDatasheet, EstimateFollowsTheComputeCapability) {
  DeviceDescription d = gpu("Some Turing Card");
  d.properties = {{"compute_capability", "7.5"}, {"sms", 40}, {"sm_clock_mhz", 1590}};
  const Datasheet ds = gpu_datasheet(d);
  EXPECT_EQ(ds.flops_per_s.count("bf16"), 0u);                     // no bf16 before 8.0
  EXPECT_EQ(ds.flops_per_s.count("fp8"), 0u);                      // no fp8 before 8.9
  EXPECT_NEAR(ds.flops_per_s.at("f16"), 40 * 1590e6 * 1024, 1e6);  // ~65 TFLOP/s, as a T4
  EXPECT_FALSE(ds.memory_Bps.has_value());
}

TEST(GpuDatasheet, UnknownGpuWithoutFactsSaysSo) {
  const Datasheet ds = gpu_datasheet(gpu("Mystery"));
  EXPECT_TRUE(ds.flops_per_s.empty());
  EXPECT_FALSE(ds.memory_Bps.has_value());
  EXPECT_NE(ds.source.find("unknown GPU"), std::string::npos);
}

}  // namespace
}  // namespace truepeak
