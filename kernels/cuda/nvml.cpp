#include "kernels/cuda/nvml.hpp"

#include <dlfcn.h>

namespace truepeak::cuda_detail {

namespace {

// The few NVML declarations used here (nvml.h is not part of every toolkit install).
using nvml_return = int;  // nvmlReturn_t; 0 is NVML_SUCCESS
using nvml_device = struct nvml_device_opaque*;
constexpr int kNvmlClockSm = 1;   // NVML_CLOCK_SM
constexpr int kNvmlClockMem = 2;  // NVML_CLOCK_MEM

class NvmlLibrary {
 public:
  NvmlLibrary() {
    handle_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return;
    auto init = symbol<nvml_return (*)()>("nvmlInit_v2");
    if (init != nullptr && init() == 0) initialised_ = true;
  }
  ~NvmlLibrary() {
    if (initialised_) {
      if (auto shutdown = symbol<nvml_return (*)()>("nvmlShutdown")) shutdown();
    }
    if (handle_ != nullptr) dlclose(handle_);
  }
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  bool ready() const { return initialised_; }

  template <typename Fn>
  Fn symbol(const char* name) const {
    return handle_ == nullptr ? nullptr : reinterpret_cast<Fn>(dlsym(handle_, name));
  }

 private:
  void* handle_ = nullptr;
  bool initialised_ = false;
};

std::optional<int> query_uint(const NvmlLibrary& nvml, nvml_device device, const char* name) {
  auto fn = nvml.symbol<nvml_return (*)(nvml_device, unsigned*)>(name);
  unsigned value = 0;
  if (fn == nullptr || fn(device, &value) != 0) return std::nullopt;
  return static_cast<int>(value);
}

std::optional<int> query_clock(const NvmlLibrary& nvml, nvml_device device, int clock_type) {
  auto fn = nvml.symbol<nvml_return (*)(nvml_device, int, unsigned*)>("nvmlDeviceGetMaxClockInfo");
  unsigned value = 0;
  if (fn == nullptr || fn(device, clock_type, &value) != 0) return std::nullopt;
  return static_cast<int>(value);
}

}  // namespace

NvmlFacts query_nvml(const std::string& pci_bus_id) noexcept {
  NvmlFacts facts;
  try {
    NvmlLibrary nvml;
    if (!nvml.ready()) return facts;
    if (auto version =
            nvml.symbol<nvml_return (*)(char*, unsigned)>("nvmlSystemGetDriverVersion")) {
      char text[96] = {};
      if (version(text, sizeof(text)) == 0) facts.driver_version = std::string(text);
    }
    auto by_bus =
        nvml.symbol<nvml_return (*)(const char*, nvml_device*)>("nvmlDeviceGetHandleByPciBusId_v2");
    nvml_device device = nullptr;
    if (by_bus == nullptr || by_bus(pci_bus_id.c_str(), &device) != 0) return facts;
    facts.max_sm_clock_mhz = query_clock(nvml, device, kNvmlClockSm);
    facts.max_memory_clock_mhz = query_clock(nvml, device, kNvmlClockMem);
    facts.pcie_generation = query_uint(nvml, device, "nvmlDeviceGetCurrPcieLinkGeneration");
    facts.pcie_max_generation = query_uint(nvml, device, "nvmlDeviceGetMaxPcieLinkGeneration");
    facts.pcie_width = query_uint(nvml, device, "nvmlDeviceGetCurrPcieLinkWidth");
    facts.pcie_max_width = query_uint(nvml, device, "nvmlDeviceGetMaxPcieLinkWidth");
    if (auto limit_mw = query_uint(nvml, device, "nvmlDeviceGetPowerManagementLimit"))
      facts.power_limit_w = *limit_mw / 1000;
  } catch (...) {
    // Facts are optional: whatever was read before a failure is kept.
  }
  return facts;
}

}  // namespace truepeak::cuda_detail
