// Host logic of the CUDA backend: runs everywhere, with or without a GPU.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/nvml.hpp"

namespace truepeak {
namespace {

TEST(CudaHost, DeviceCountNeverThrowsAndExplainsZero) {
  CudaDeviceCount devices;
  ASSERT_NO_THROW(devices = cuda_device_count());
  EXPECT_GE(devices.count, 0);
  if (devices.count == 0) {
    EXPECT_FALSE(devices.reason.empty());
  }
}

TEST(CudaHost, BackendForAMissingDeviceIsUnsupported) {
  const CudaDeviceCount devices = cuda_device_count();
  EXPECT_THROW(make_cuda_backend(devices.count), Unsupported);  // one past the last
  EXPECT_THROW(make_cuda_backend(-1), Unsupported);
  if (devices.count == 0) {
    try {
      make_cuda_backend(0);
      FAIL() << "expected Unsupported";
    } catch (const Unsupported& e) {
      EXPECT_NE(std::string(e.what()).find(devices.reason), std::string::npos) << e.what();
    }
  }
}

TEST(CudaHost, PcieLinkRateAfterEncoding) {
  using cuda_detail::pcie_link_Bps;
  EXPECT_NEAR(*pcie_link_Bps(5, 16), 63.0e9, 0.1e9);  // Gen5 x16
  EXPECT_NEAR(*pcie_link_Bps(4, 16), 31.5e9, 0.1e9);
  EXPECT_NEAR(*pcie_link_Bps(3, 16), 15.75e9, 0.1e9);
  EXPECT_NEAR(*pcie_link_Bps(1, 1), 0.25e9, 1e6);
  EXPECT_FALSE(pcie_link_Bps(0, 16).has_value());
  EXPECT_FALSE(pcie_link_Bps(9, 16).has_value());
  EXPECT_FALSE(pcie_link_Bps(4, 0).has_value());
}

TEST(CudaHost, ClockEventReasonsByName) {
  using cuda_detail::clock_event_text;
  EXPECT_EQ(clock_event_text(0), "none");
  EXPECT_EQ(clock_event_text(0x1), "idle");
  EXPECT_EQ(clock_event_text(0x4), "sw_power_cap");
  EXPECT_EQ(clock_event_text(0x4 | 0x40), "sw_power_cap,hw_thermal");
  EXPECT_EQ(clock_event_text(0x4 | 0x1000), "sw_power_cap,0x1000");  // a bit of a later NVML
}

TEST(CudaHost, StateTextSaysOnlyWhatWasRead) {
  using cuda_detail::NvmlState;
  using cuda_detail::state_text;
  EXPECT_EQ(state_text(NvmlState{}), "");
  EXPECT_EQ(state_text(NvmlState{1755, 689.6, 0x4}), "sm 1755 MHz, 690 W, limited by sw_power_cap");
  EXPECT_EQ(state_text(NvmlState{1980, std::nullopt, std::nullopt}), "sm 1980 MHz");
}

TEST(CudaHost, FastestSampleKeepsTheStateOfTheFastest) {
  cuda_detail::FastestSampleState fastest;
  EXPECT_EQ(fastest.text(), "");
  fastest.note(1e-3, nullptr);  // no monitor: nothing to keep
  EXPECT_EQ(fastest.text(), "");
  // A monitor for a bus that does not exist reads nothing, on a machine with or without NVML.
  const cuda_detail::NvmlMonitor monitor("ffff:ff:1f.7");
  EXPECT_EQ(cuda_detail::state_text(monitor.read()), "");
  fastest.note(1e-3, &monitor);
  EXPECT_EQ(fastest.text(), "");
}

}  // namespace
}  // namespace truepeak
