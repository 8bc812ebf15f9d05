// Host logic of the CUDA backend: runs everywhere, with or without a GPU.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_kernels.hpp"

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

}  // namespace
}  // namespace truepeak
