// What NVML adds to the CUDA runtime's device facts (maximum clocks, PCIe link, driver version).
// NVML ships with the driver, not the toolkit, so it is loaded at run time with dlopen; every
// field stays empty where the library or the query is missing.
#pragma once

#include <optional>
#include <string>

namespace truepeak::cuda_detail {

struct NvmlFacts {
  std::optional<std::string> driver_version;
  std::optional<int> max_sm_clock_mhz;
  std::optional<int> max_memory_clock_mhz;
  std::optional<int> pcie_generation;      // current link (drops when the GPU idles)
  std::optional<int> pcie_max_generation;  // what this GPU and this system support together
  std::optional<int> pcie_width;
  std::optional<int> pcie_max_width;
  std::optional<int> power_limit_w;
};

// `pci_bus_id` as cudaDeviceGetPCIBusId writes it ("0000:3B:00.0"). Never throws.
NvmlFacts query_nvml(const std::string& pci_bus_id) noexcept;

}  // namespace truepeak::cuda_detail
