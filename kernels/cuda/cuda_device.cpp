// Device facts: the CUDA runtime's attributes, NVML's clocks and PCIe link, library versions.
#include <fmt/format.h>

#include "core/error.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/nvml.hpp"

namespace truepeak {

CudaDeviceCount cuda_device_count() {
  CudaDeviceCount result;
  try {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      result.reason = fmt::format("{}: {}", cudaGetErrorName(status), cudaGetErrorString(status));
      cudaGetLastError();  // clear it, so later calls do not see it
      return result;
    }
    result.count = count;
    if (count == 0) result.reason = "the CUDA runtime sees no device (check CUDA_VISIBLE_DEVICES)";
  } catch (...) {
    result.count = 0;
    result.reason = "the CUDA runtime could not be queried";
  }
  return result;
}

namespace cuda_detail {

namespace {

// Facts that are nice to have: a runtime that no longer reports one gives null, not a failure.
std::optional<int> attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  return value;
}

std::optional<int> in_mhz(std::optional<int> khz) {
  if (!khz || *khz <= 0) return std::nullopt;
  return *khz / 1000;
}

std::string version_text(int encoded) {  // CUDA encodes 13.0 as 13000
  return fmt::format("{}.{}", encoded / 1000, (encoded % 1000) / 10);
}

nlohmann::json optional_json(const std::optional<int>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

std::optional<double> pcie_link_Bps(int generation, int width) {
  // Bytes per second per lane after encoding.
  double lane_Bps = 0;
  switch (generation) {
    case 1:
      lane_Bps = 2.5e9 * 8 / 10 / 8;
      break;
    case 2:
      lane_Bps = 5e9 * 8 / 10 / 8;
      break;
    case 3:
      lane_Bps = 8e9 * 128 / 130 / 8;
      break;
    case 4:
      lane_Bps = 16e9 * 128 / 130 / 8;
      break;
    case 5:
      lane_Bps = 32e9 * 128 / 130 / 8;
      break;
    case 6:
      lane_Bps = 64e9 * 242 / 256 / 8;
      break;
    default:
      return std::nullopt;
  }
  if (width <= 0) return std::nullopt;
  return lane_Bps * width;
}

DeviceDescription describe_device(int index, DeviceFacts& facts) {
  TP_CUDA_CHECK(cudaSetDevice(index));
  cudaDeviceProp prop{};
  TP_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  char bus_id[32] = {};
  TP_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), index));
  const NvmlFacts nvml = query_nvml(bus_id);

  facts.index = index;
  facts.cc_major = prop.major;
  facts.cc_minor = prop.minor;
  facts.sms = prop.multiProcessorCount;
  facts.l2_bytes = prop.l2CacheSize;
  facts.name = prop.name;
  facts.monitor = std::make_shared<const NvmlMonitor>(bus_id);

  DeviceDescription d;
  d.id = fmt::format("cuda:{}", index);
  d.kind = "gpu";
  d.name = prop.name;

  int runtime_version = 0, driver_api_version = 0;
  TP_CUDA_CHECK(cudaRuntimeGetVersion(&runtime_version));
  TP_CUDA_CHECK(cudaDriverGetVersion(&driver_api_version));
  const std::size_t cublas = cublasLtGetVersion();  // 130001 = 13.0.1
  d.libraries["cuda_runtime"] = version_text(runtime_version);
  d.libraries["cuda_driver_api"] = version_text(driver_api_version);
  d.libraries["driver"] =
      nvml.driver_version ? nlohmann::json(*nvml.driver_version) : nlohmann::json(nullptr);
  d.libraries["cublas"] =
      fmt::format("{}.{}.{}", cublas / 10000, (cublas % 10000) / 100, cublas % 100);
  const auto cudnn = cudnn_version();
  d.libraries["cudnn"] = cudnn ? nlohmann::json(*cudnn) : nlohmann::json(nullptr);

  const std::optional<int> bus_width_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, index);
  // HBM stacks have 1024-bit interfaces; GDDR parts top out at 512 bits.
  const std::string memory_name = bus_width_bits.value_or(0) >= 1024 ? "HBM" : "DRAM";
  auto& p = d.properties;
  p["compute_capability"] = fmt::format("{}.{}", prop.major, prop.minor);
  p["sms"] = prop.multiProcessorCount;
  p["sm_clock_mhz"] = optional_json(in_mhz(attribute(cudaDevAttrClockRate, index)));
  p["max_sm_clock_mhz"] = optional_json(nvml.max_sm_clock_mhz);
  p["memory_clock_mhz"] = optional_json(in_mhz(attribute(cudaDevAttrMemoryClockRate, index)));
  p["max_memory_clock_mhz"] = optional_json(nvml.max_memory_clock_mhz);
  p["memory_bus_width_bits"] = optional_json(bus_width_bits);
  p["memory_type"] = memory_name;
  p["l2_bytes"] = prop.l2CacheSize;
  p["shared_memory_per_sm_bytes"] = prop.sharedMemPerMultiprocessor;
  p["registers_per_sm"] = prop.regsPerMultiprocessor;
  p["max_threads_per_sm"] = prop.maxThreadsPerMultiProcessor;
  p["ecc_enabled"] = prop.ECCEnabled != 0;
  p["pci_bus_id"] = std::string(bus_id);
  p["pcie_generation"] = optional_json(nvml.pcie_generation);
  p["pcie_max_generation"] = optional_json(nvml.pcie_max_generation);
  p["pcie_width"] = optional_json(nvml.pcie_width);
  p["pcie_max_width"] = optional_json(nvml.pcie_max_width);
  // The link's rate: an idle GPU drops to a lower generation, so the maximum is the figure
  // transfers are compared with.
  std::optional<double> link;
  if (nvml.pcie_max_generation && nvml.pcie_max_width)
    link = pcie_link_Bps(*nvml.pcie_max_generation, *nvml.pcie_max_width);
  p["pcie_link_Bps"] = link ? nlohmann::json(*link) : nlohmann::json(nullptr);
  p["power_limit_w"] = optional_json(nvml.power_limit_w);

  d.levels.push_back({"L2", static_cast<std::int64_t>(prop.l2CacheSize)});
  d.levels.push_back({memory_name, static_cast<std::int64_t>(prop.totalGlobalMem)});
  d.memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  return d;
}

}  // namespace cuda_detail
}  // namespace truepeak
