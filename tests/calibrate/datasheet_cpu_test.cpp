// The theoretical-peak derivation on synthetic CPUs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "calibrate/datasheet.hpp"

namespace truepeak {
namespace {

DeviceDescription cpu(const std::string& name, int cores, double mhz,
                      const std::vector<const char*>& flags) {
  DeviceDescription d;
  d.id = "cpu";
  d.kind = "cpu";
  d.name = name;
  d.properties["cores"] = cores;
  d.properties["frequency_mhz"] = mhz;
  d.properties["max_frequency_mhz"] = nullptr;
  nlohmann::json isa = nlohmann::json::object();
  for (const char* f : flags) isa[f] = true;
  isa["avx512_fp16"] = isa.value("avx512_fp16", false);
  d.properties["isa"] = isa;
  return d;
}

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// One CPU as its vendor sells it, and its per-core rates per cycle, derived by hand from the
// vendor's figures (comments at each row). 0: no instruction for the dtype, so no peak.
struct Sku {
  const char* name;
  const char* vendor;
  int family, model, cores;
  double base_mhz;
  std::vector<const char*> flags;
  double f32_flop_per_cycle, bf16_flop_per_cycle, int8_op_per_cycle;
  const char* f32_unit_note;  // a phrase the source line must carry
};

// Flags as the backend records them (kernels/cpu/cpu_backend.cpp), of /proc/cpuinfo's names.
const std::vector<const char*> kSprFlags = {"avx2",     "fma",         "avx512f",     "avx512bw",
                                            "avx512vl", "avx512_bf16", "avx512_fp16", "avx512_vnni",
                                            "avx_vnni", "amx_tile",    "amx_bf16",    "amx_int8"};
const std::vector<const char*> kZen4Flags = {"avx2",     "fma",         "avx512f",    "avx512bw",
                                             "avx512vl", "avx512_bf16", "avx512_vnni"};

const std::vector<Sku>& skus() {
  static const std::vector<Sku> table = {
      // Sapphire Rapids. ARK: 56 cores, 2.0 GHz base, "# of AVX-512 FMA Units" 2, Intel AMX.
      //   f32: 2 units x 16 lanes x 2 = 64 FLOP/cycle.
      //   bf16, int8: Intel's AMX figures, "1024 BF16 / 2048 INT8 operations per cycle per core":
      //   a TDPBF16PS does 16x16x32 MACs in 16 cycles (512 MAC = 1024 FLOP), a TDPBUSD 16x16x64
      //   (1024 MAC = 2048 OP). Whole part at base: 56 x 2.0 GHz x 1024 = 114.7 TFLOP/s bf16 and
      //   56 x 2.0 GHz x 2048 = 229.4 TOP/s int8 (rule 1 gave twice each).
      {"Intel(R) Xeon(R) Platinum 8480+", "GenuineIntel", 6, 0x8F, 56, 2000, kSprFlags, 64, 1024,
       2048, "2 FMA units"},
      // Emerald Rapids. ARK: 64 cores, 1.9 GHz base, 2 AVX-512 FMA units, Intel AMX; its Raptor
      // Cove core keeps Sapphire Rapids' AMX unit: the same 1024 / 2048 operations per cycle.
      {"INTEL(R) XEON(R) PLATINUM 8592+", "GenuineIntel", 6, 0xCF, 64, 1900, kSprFlags, 64, 1024,
       2048, "2 FMA units"},
      // Granite Rapids. ARK: 128 cores, 2.0 GHz base, 2 AVX-512 FMA units, Intel AMX (adding
      // FP16, which the backend does not record and the plan does not measure); the same AMX
      // rates per core.
      {"Intel(R) Xeon(R) 6980P", "GenuineIntel", 6, 0xAD, 128, 2000, kSprFlags, 64, 1024, 2048,
       "2 FMA units"},
      // Ice Lake. ARK: 40 cores, 2.3 GHz base, 2 AVX-512 FMA units, VNNI, no AVX512_BF16.
      //   int8: Intel's "256 INT8 operations per cycle" for AVX-512 VNNI on a two-unit core
      //   (2 x VPDPBUSD of 16 lanes x 4 MACs x 2).
      {"Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz",
       "GenuineIntel",
       6,
       0x6A,
       40,
       2300,
       {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"},
       64,
       0,
       256,
       "2 FMA units"},
      // Zen 3 (Milan). AMD: 64 cores, 2.45 GHz base; two 256-bit FMA pipes (Software
      // Optimization Guide for AMD Family 19h): 2 x 8 lanes x 2 = 32 FLOP/cycle. No AVX-512, no
      // bf16 or VNNI instruction. (results/zen3-dev-cpu.json measured 188 GFLOP/s f32 GEMM on 2
      // cores at 3244 MHz: 29 FLOP/cycle/core.)
      {"AMD EPYC 7763 64-Core Processor",
       "AuthenticAMD",
       0x19,
       0x01,
       64,
       2450,
       {"avx2", "fma"},
       32,
       0,
       0,
       "2 FMA units"},
      // Zen 4 (Genoa). AMD: 96 cores, 2.4 GHz base; 512-bit ops run as two halves on the two
      // 256-bit FMA pipes (Software Optimization Guide for the AMD Zen4 Microarchitecture): one
      // 512-bit FMA a cycle, 16 x 2 = 32 FLOP/cycle. VDPBF16PS (2 MACs per 32-bit lane) and
      // VPDPBUSD (4) issue there at the same rate: 64 FLOP and 128 OP per cycle.
      // (results/zen4-dev-cpu.json measured 456 GFLOP/s bf16 and 883 GOP/s int8 GEMM on 2 cores
      // at 3695 MHz: 61.7 and 119.5 per cycle per core, under 64 and 128.)
      {"AMD EPYC 9654 96-Core Processor", "AuthenticAMD", 0x19, 0x11, 96, 2400, kZen4Flags, 32, 64,
       128, "Zen 4"},
      // Zen 5 (Turin). AMD: 128 cores, 2.7 GHz base; two 512-bit FMA pipes (Software
      // Optimization Guide for AMD Family 1Ah): 2 x 16 x 2 = 64 FLOP/cycle; bf16 twice and int8
      // four times that. (results/dev-cpu.json measured 1038 GFLOP/s bf16 and 2004 GOP/s int8
      // on 2 cores at 4530 MHz: 114.6 and 221 per cycle per core, under 128 and 256.)
      {"AMD EPYC 9755 128-Core Processor",
       "AuthenticAMD",
       0x1A,
       0x02,
       128,
       2700,
       {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_vnni", "avx_vnni"},
       64,
       128,
       256,
       "Zen 5"},
      // Zen 5 mobile (Strix Point). AMD: 12 cores, 2.0 GHz base; 256-bit datapaths, so Zen 4's
      // rates.
      {"AMD Ryzen AI 9 HX 370 w/ Radeon 890M",
       "AuthenticAMD",
       0x1A,
       0x24,
       12,
       2000,
       {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_vnni", "avx_vnni"},
       32,
       64,
       128,
       "Zen 5 mobile"},
      // Sapphire Rapids in a VM that hides AMX (the name as such VMs show it). VDPBF16PS takes
      // ports 0 and 5 for two cycles each (LLVM's Sapphire Rapids model): 16 lanes x 2 MACs / 2
      // = 16 MAC = 32 FLOP/cycle, half the f32 rate. Such a VM measured 175 GFLOP/s bf16 GEMM
      // against 347 f32 on 2 cores at ~2.8 GHz (31 FLOP/cycle/core); rule 1 said 128.
      {"Intel(R) Xeon(R) Processor",
       "GenuineIntel",
       6,
       0x8F,
       2,
       2300,
       {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_fp16",
        "avx512_vnni", "avx_vnni"},
       64,
       32,
       256,
       "assumed: 2 on server Xeons"},
      // Skylake-SP. ARK: Gold 5120 (14 cores, 2.2 GHz) has 1 AVX-512 FMA unit, Gold 6130 (16, 2.1)
      // and Gold 5122 (4, 3.6) have 2; Cascade Lake Silver 4214 (12, 2.2) has 1 and VNNI.
      {"Intel(R) Xeon(R) Gold 5120 CPU @ 2.20GHz",
       "GenuineIntel",
       6,
       0x55,
       14,
       2200,
       {"avx2", "fma", "avx512f", "avx512bw", "avx512vl"},
       32,
       0,
       0,
       "ARK: 1"},
      {"Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz",
       "GenuineIntel",
       6,
       0x55,
       16,
       2100,
       {"avx2", "fma", "avx512f", "avx512bw", "avx512vl"},
       64,
       0,
       0,
       "2 FMA units"},
      {"Intel(R) Xeon(R) Gold 5122 CPU @ 3.60GHz",
       "GenuineIntel",
       6,
       0x55,
       4,
       3600,
       {"avx2", "fma", "avx512f", "avx512bw", "avx512vl"},
       64,
       0,
       0,
       "2 FMA units"},
      {"Intel(R) Xeon(R) Silver 4214 CPU @ 2.20GHz",
       "GenuineIntel",
       6,
       0x55,
       12,
       2200,
       {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"},
       32,
       0,
       128,
       "ARK: 1"},
      // Client AVX-512 cores fuse ports 0 and 1 into one 512-bit FMA: Ice Lake i7-1065G7 (4
      // cores, 1.3 GHz base) and the Rocket Lake Xeon E-2388G (8 cores, 3.2 GHz base).
      {"Intel(R) Core(TM) i7-1065G7 CPU @ 1.30GHz",
       "GenuineIntel",
       6,
       0x7E,
       4,
       1300,
       {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"},
       32,
       0,
       128,
       "1 on client"},
      {"Intel(R) Xeon(R) E-2388G CPU @ 3.20GHz",
       "GenuineIntel",
       6,
       0xA7,
       8,
       3200,
       {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"},
       32,
       0,
       128,
       "Rocket Lake"},
      // Zen (Naples). AMD: EPYC 7601, 32 cores, 2.2 GHz base; two 128-bit FMA pipes (Software
      // Optimization Guide for AMD Family 17h): 2 x 4 lanes x 2 = 16 FLOP/cycle. Zen 2 (Rome,
      // EPYC 7742: 64 cores, 2.25 GHz) widened them to 256 bits: 32.
      {"AMD EPYC 7601 32-Core Processor",
       "AuthenticAMD",
       0x17,
       0x01,
       32,
       2200,
       {"avx2", "fma"},
       16,
       0,
       0,
       "Zen/Zen+"},
      {"AMD EPYC 7742 64-Core Processor",
       "AuthenticAMD",
       0x17,
       0x31,
       64,
       2250,
       {"avx2", "fma"},
       32,
       0,
       0,
       "2 FMA units"},
  };
  return table;
}

DeviceDescription describe(const Sku& sku) {
  DeviceDescription d;
  d.id = "cpu";
  d.kind = "cpu";
  d.name = sku.name;
  d.properties["vendor"] = sku.vendor;
  d.properties["family"] = sku.family;
  d.properties["model"] = sku.model;
  d.properties["cores"] = sku.cores;
  d.properties["frequency_mhz"] = sku.base_mhz;
  d.properties["max_frequency_mhz"] = nullptr;
  nlohmann::json isa = nlohmann::json::object();
  for (const char* f : sku.flags) isa[f] = true;
  d.properties["isa"] = isa;
  return d;
}

TEST(CpuDatasheet, VendorSkusGetTheirDocumentedRates) {
  for (const auto& sku : skus()) {
    SCOPED_TRACE(sku.name);
    const auto sheet = cpu_datasheet(describe(sku));
    const double hz = sku.cores * sku.base_mhz * 1e6;
    EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("f32"), hz * sku.f32_flop_per_cycle);
    EXPECT_DOUBLE_EQ(sheet.vector_flops_per_s.at("f32"), hz * sku.f32_flop_per_cycle);
    if (sku.bf16_flop_per_cycle > 0) {
      EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("bf16"), hz * sku.bf16_flop_per_cycle);
    } else {
      EXPECT_EQ(sheet.flops_per_s.count("bf16"), 0u);
    }
    if (sku.int8_op_per_cycle > 0) {
      EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("int8"), hz * sku.int8_op_per_cycle);
    } else {
      EXPECT_EQ(sheet.flops_per_s.count("int8"), 0u);
    }
    EXPECT_TRUE(has(sheet.source, sku.f32_unit_note)) << sheet.source;
    EXPECT_TRUE(has(sheet.source, "(cpu rule 2)")) << sheet.source;
    EXPECT_EQ(cpu_datasheet_rule(sheet.source), kCpuDatasheetRule);
  }
}

TEST(CpuDatasheet, AmxCountsEachMultiplyAddOnce) {
  // Xeon Platinum 8480+, 56 cores at a 2.0 GHz clock:
  //   bf16 = 56 x 2.0e9 x 512 MAC x 2 = 114.688 TFLOP/s (229.376 before, the MACs counted twice)
  //   int8 = 56 x 2.0e9 x 1024 MAC x 2 = 229.376 TOP/s (458.752 before)
  //   f32  = 56 x 2.0e9 x 2 units x 16 lanes x 2 = 7.168 TFLOP/s
  const auto sheet = cpu_datasheet(cpu("Intel(R) Xeon(R) Platinum 8480+", 56, 2000, kSprFlags));
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("bf16"), 114.688e12);
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("int8"), 229.376e12);
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("f32"), 7.168e12);
  // The source names the cores, the clock and each rate, in MACs and in operations.
  EXPECT_TRUE(has(sheet.source, "56 cores x 2000 MHz")) << sheet.source;
  EXPECT_TRUE(has(sheet.source, "bf16 1024 FLOP/cycle/core (AMX-BF16, 512 MAC/cycle"))
      << sheet.source;
  EXPECT_TRUE(has(sheet.source, "int8 2048 OP/cycle/core (AMX-INT8, 1024 MAC/cycle"))
      << sheet.source;
  EXPECT_TRUE(has(sheet.source, "= 114.69 TFLOP/s")) << sheet.source;
  EXPECT_TRUE(has(sheet.source, "= 229.38 TOP/s")) << sheet.source;
  // The clock of heavy AMX and AVX-512 code is not the measured one, and the line says so.
  EXPECT_TRUE(has(sheet.source, "may run below this clock")) << sheet.source;
}

TEST(CpuDatasheet, IntelAvx512Bf16IsHalfTheF32RateAndVnniFourTimes) {
  // A Sapphire Rapids VM without AMX: 2 cores, 2300 MHz.
  const auto sheet = cpu_datasheet(cpu("Intel(R) Xeon(R) Processor", 2, 2300,
                                       {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"}));
  const double f32 = 2 * 2.3e9 * 2 * 16 * 2;  // cores x Hz x units x lanes x 2
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("f32"), f32);
  EXPECT_DOUBLE_EQ(sheet.vector_flops_per_s.at("f32"), f32);
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("bf16"), 2 * 2.3e9 * 16 * 2);  // 16 MAC/cycle/core
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("int8"), 4 * f32);
  EXPECT_FALSE(sheet.memory_Bps.has_value());
  EXPECT_TRUE(has(sheet.source, "2 FMA units")) << sheet.source;
  EXPECT_TRUE(has(sheet.source, "VDPBF16PS per 2 cycles")) << sheet.source;
  EXPECT_TRUE(has(sheet.source, "not derivable")) << sheet.source;
}

TEST(CpuDatasheet, ClientAvx512HasOneUnitAndAvx2HasTwo) {
  const auto client =
      cpu_datasheet(cpu("11th Gen Intel(R) Core(TM) i7", 4, 3000, {"avx2", "fma", "avx512f"}));
  EXPECT_DOUBLE_EQ(client.flops_per_s.at("f32"), 4 * 3.0e9 * 1 * 16 * 2);
  EXPECT_EQ(client.flops_per_s.count("bf16"), 0u);
  EXPECT_EQ(client.flops_per_s.count("int8"), 0u);

  const auto avx2 = cpu_datasheet(cpu("AMD EPYC 7B12", 8, 2250, {"avx2", "fma"}));
  EXPECT_DOUBLE_EQ(avx2.flops_per_s.at("f32"), 8 * 2.25e9 * 2 * 8 * 2);
  // Only AVX-512 and AMX code has clocks of its own to warn of.
  EXPECT_FALSE(has(avx2.source, "may run below this clock")) << avx2.source;
}

TEST(CpuDatasheet, PrefersMaxClockAndSaysSo) {
  auto d = cpu("Intel(R) Xeon(R) Gold", 2, 2000, {"avx2", "fma", "avx512f"});
  d.properties["max_frequency_mhz"] = 3000.0;
  const auto sheet = cpu_datasheet(d);
  EXPECT_DOUBLE_EQ(sheet.flops_per_s.at("f32"), 2 * 3.0e9 * 64);
  EXPECT_TRUE(has(sheet.source, "cpuinfo_max_freq"));
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
  EXPECT_TRUE(has(zen5.source, "Zen 5")) << zen5.source;

  const auto zen4 = cpu_datasheet(amd("AMD EPYC 9654 96-Core Processor", 0x19, 3700));
  EXPECT_DOUBLE_EQ(zen4.flops_per_s.at("f32"), 2 * 3.7e9 * 1 * 16 * 2);
  EXPECT_TRUE(has(zen4.source, "Zen 4")) << zen4.source;

  const auto mobile = cpu_datasheet(amd("AMD Ryzen AI 9 HX 370", 0x1A, 5100));
  EXPECT_DOUBLE_EQ(mobile.flops_per_s.at("f32"), 2 * 5.1e9 * 1 * 16 * 2);
}

TEST(CpuDatasheet, OnAVmTheMeasuredClockBeatsTheNominalOneButNotCpufreq) {
  // A VM: no cpufreq, "cpu MHz" is the nominal 2596, the cores run at 4100.
  const auto vm = cpu_datasheet(amd("AMD EPYC", 0x1A, 4100));
  EXPECT_TRUE(has(vm.source, "4100 MHz (measured")) << vm.source;
  EXPECT_TRUE(has(vm.source, "says 2596")) << vm.source;

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

// A stored CPU device as the AMX development VM's profile holds it: 2 cores, no cpufreq, a
// measured clock of 4191.37 MHz, and a datasheet from rule 1.
Device stored_amx_vm() {
  Device device;
  device.id = "cpu";
  device.kind = "cpu";
  device.name = "Intel(R) Xeon(R) Processor";
  const auto d = cpu(device.name, 2, 2600.002, kSprFlags);
  device.properties = d.properties;
  device.properties["vendor"] = "GenuineIntel";
  device.properties["family"] = 6;
  device.properties["measured_frequency_mhz"] = 4191.372844881221;
  device.datasheet.flops_per_s = {{"f32", 536.5e9}, {"bf16", 17.17e12}, {"int8", 34.34e12}};
  device.datasheet.source =
      "derived: 2 cores x 4191 MHz (measured with a dependent add chain; 'cpu MHz' in "
      "/proc/cpuinfo says 2600) x AVX-512 FMA, 16 f32 lanes, 2 FMA units per core (assumed: 2 on "
      "server Xeons) x 2 = 536.5 GFLOP/s f32; bf16: AMX, 1024 MAC/cycle/core; int8: AMX, 2048 "
      "MAC/cycle/core; memory bandwidth not derivable (memory channels and speed are not "
      "readable without root)";
  return device;
}

TEST(CpuDatasheet, AnOlderRuleIsReDerivedFromTheStoredProperties) {
  const auto device = stored_amx_vm();
  EXPECT_EQ(cpu_datasheet_rule(device.datasheet.source), 1);
  const auto sheet = rederived_cpu_datasheet(device);
  ASSERT_TRUE(sheet.has_value());
  // 2 cores x 4191.37 MHz x 1024 FLOP/cycle = 8.58 TFLOP/s bf16 (17.17 under rule 1), x 2048 =
  // 17.17 TOP/s int8 (34.34); f32 x 64 = 536.5 GFLOP/s, unchanged.
  const double hz = 2 * 4191.372844881221e6;
  EXPECT_DOUBLE_EQ(sheet->flops_per_s.at("bf16"), hz * 1024);
  EXPECT_DOUBLE_EQ(sheet->flops_per_s.at("int8"), hz * 2048);
  EXPECT_DOUBLE_EQ(sheet->flops_per_s.at("f32"), hz * 64);
  EXPECT_NEAR(sheet->flops_per_s.at("bf16"), 8.58e12, 0.01e12);
  EXPECT_TRUE(has(sheet->source, "re-derived")) << sheet->source;
  EXPECT_TRUE(has(sheet->source, "cpu rule 1")) << sheet->source;
  EXPECT_TRUE(has(sheet->source, "2 cores x 4191 MHz")) << sheet->source;
  EXPECT_TRUE(has(sheet->source, "= 8.58 TFLOP/s")) << sheet->source;
  // What it wrote back is current, and a current datasheet is left as it is.
  EXPECT_EQ(cpu_datasheet_rule(sheet->source), kCpuDatasheetRule);
  auto current = device;
  current.datasheet = *sheet;
  EXPECT_FALSE(rederived_cpu_datasheet(current).has_value());
}

TEST(CpuDatasheet, OnlyCpuDatasheetsAreReDerived) {
  Device gpu;
  gpu.id = "cuda:0";
  gpu.kind = "gpu";
  gpu.datasheet.source = "vendor datasheet: H200 (dense, no sparsity)";
  EXPECT_FALSE(rederived_cpu_datasheet(gpu).has_value());
}

}  // namespace
}  // namespace truepeak
