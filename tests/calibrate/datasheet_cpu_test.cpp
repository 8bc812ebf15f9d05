// The theoretical-peak derivation on synthetic CPUs.
#include <gtest/gtest.h>

#include "calibrate/datasheet.hpp"

namespace truepeak {
namespace {

DeviceDescription cpu(const std::string& name, int cores, double mhz,
                      std::initializer_list<const char*> flags) {
  DeviceDescription d;
  d.id = "cpu";
  d.kind = "cpu";
  d.name = name;
  d.properties["cores"] = cores;
  d.properties["frequency_mhz"] = mhz;
  d.properties["max_frequency_mhz"] = nullptr;
  nlohmann::json isa = nlohmann::json::object();
  for (const char* f : flags) isa[f] = true;
  isa["avx512_fp16"] = false;
  d.properties["isa"] = isa;
  return d;
}

TEST(CpuDatasheet, XeonAvx512Bf16Vnni) {
  // This development VM: 2 cores, 2300 MHz, AVX-512 with BF16 and VNNI, no AMX exposed.
  const auto sheet = cpu_datasheet(cpu("Intel(R) Xeon(R) Processor", 2, 2300,
                                       {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"}));
  const double f32 = 2 * 2.3e9 * 2 * 16 * 2;  // cores x Hz x units x lanes x 2
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("f32"), f32);
  EXPECT_DOUBLE_EQ(sheet.vector_flops_per_s.at("f32"), f32);
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("bf16"), 2 * f32);
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("int8"), 4 * f32);
  EXPECT_FALSE(sheet.memory_Bps.has_value());
  EXPECT_NE(sheet.source.find("2 FMA units"), std::string::npos) << sheet.source;
  EXPECT_NE(sheet.source.find("not derivable"), std::string::npos) << sheet.source;
}

TEST(CpuDatasheet, AmxUsesTileRates) {
  const auto sheet = cpu_datasheet(cpu("Intel(R) Xeon(R) Platinum 8480+", 56, 2000,
                                       {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni",
                                        "amx_tile", "amx_bf16", "amx_int8"}));
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("bf16"), 56 * 2.0e9 * 1024 * 2);
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("int8"), 56 * 2.0e9 * 2048 * 2);
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("f32"), 56 * 2.0e9 * 64);
}

TEST(CpuDatasheet, ClientAvx512HasOneUnitAndAvx2HasTwo) {
  const auto client =
      cpu_datasheet(cpu("11th Gen Intel(R) Core(TM) i7", 4, 3000, {"avx2", "fma", "avx512f"}));
  EXPECT_DOUBLE_EQ(client.flops_per_s.at("f32"), 4 * 3.0e9 * 1 * 16 * 2);
  EXPECT_EQ(client.flops_per_s.count("bf16"), 0u);
  EXPECT_EQ(client.flops_per_s.count("int8"), 0u);

  const auto avx2 = cpu_datasheet(cpu("AMD EPYC 7B12", 8, 2250, {"avx2", "fma"}));
  EXPECT_DOUBLE_EQ(avx2.flops_per_s.at("f32"), 8 * 2.25e9 * 2 * 8 * 2);
}

TEST(CpuDatasheet, PrefersMaxClockAndSaysSo) {
  auto d = cpu("Intel(R) Xeon(R) Gold", 2, 2000, {"avx2", "fma", "avx512f"});
  d.properties["max_frequency_mhz"] = 3000.0;
  const auto sheet = cpu_datasheet(d);
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("f32"), 2 * 3.0e9 * 64);
  EXPECT_NE(sheet.source.find("cpuinfo_max_freq"), std::string::npos);
}

DeviceDescription amd(const std::string& name, int family, double measured_mhz) {
  auto d = cpu(name, 2, 2596, {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"});
  d.properties["vendor"] = "AuthenticAMD";
  d.properties["family"] = family;
  d.properties["measured_frequency_mhz"] = measured_mhz;
  return d;
}

TEST(CpuDatasheet, Zen5ServerHasTwo512BitUnitsAndZen4One) {
  const auto zen5 = cpu_datasheet(amd("AMD EPYC", 0x1A, 4100));
  EXPECT_DOUBLE_EQ(zen5.flops_per_s.at("f32"), 2 * 4.1e9 * 2 * 16 * 2);
  EXPECT_DOUBLE_EQ(zen5.flops_per_s.at("bf16"), 2 * zen5.flops_per_s.at("f32"));
  EXPECT_DOUBLE_EQ(zen5.flops_per_s.at("int8"), 4 * zen5.flops_per_s.at("f32"));
  EXPECT_NE(zen5.source.find("Zen 5"), std::string::npos) << zen5.source;

  const auto zen4 = cpu_datasheet(amd("AMD EPYC 9654 96-Core Processor", 0x19, 3700));
  EXPECT_DOUBLE_EQ(zen4.flops_per_s.at("f32"), 2 * 3.7e9 * 1 * 16 * 2);
  EXPECT_NE(zen4.source.find("Zen 4"), std::string::npos) << zen4.source;

  const auto mobile = cpu_datasheet(amd("AMD Ryzen AI 9 HX 370", 0x1A, 5100));
  EXPECT_DOUBLE_EQ(mobile.flops_per_s.at("f32"), 2 * 5.1e9 * 1 * 16 * 2);
}

TEST(CpuDatasheet, OnAVmTheMeasuredClockBeatsTheNominalOneButNotCpufreq) {
  // A VM: no cpufreq, "cpu MHz" is the nominal 2596, the cores run at 4100.
  const auto vm = cpu_datasheet(amd("AMD EPYC", 0x1A, 4100));
  EXPECT_NE(vm.source.find("4100 MHz (measured"), std::string::npos) << vm.source;
  EXPECT_NE(vm.source.find("says 2596"), std::string::npos) << vm.source;

  // A measured clock below the nominal one (a slow trial) does not lower the peak.
  const auto slow = cpu_datasheet(amd("AMD EPYC", 0x1A, 1800));
  EXPECT_DOUBLE_EQ(slow.flops_per_s.at("f32"), 2 * 2.596e9 * 64);

  // cpufreq's maximum, where readable, is the rated turbo clock and wins.
  auto metal = amd("AMD EPYC", 0x1A, 4100);
  metal.properties["max_frequency_mhz"] = 4500.0;
  EXPECT_DOUBLE_EQ(cpu_datasheet(metal).flops_per_s.at("f32"), 2 * 4.5e9 * 64);
}

TEST(CpuDatasheet, UnknownClockGivesNoPeak) {
  auto d = cpu("x", 2, 0, {"avx2", "fma"});
  d.properties.erase("frequency_mhz");
  const auto sheet = cpu_datasheet(d);
  EXPECT_TRUE(sheet.flops_per_s.empty());
  EXPECT_FALSE(sheet.source.empty());
}

}  // namespace
}  // namespace truepeak
