#include "kernels/cuda/nvml.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <utility>
#include <vector>

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

nvml_device device_by_bus(const NvmlLibrary& nvml, const std::string& pci_bus_id) {
  auto by_bus =
      nvml.symbol<nvml_return (*)(const char*, nvml_device*)>("nvmlDeviceGetHandleByPciBusId_v2");
  nvml_device device = nullptr;
  if (by_bus == nullptr || by_bus(pci_bus_id.c_str(), &device) != 0) return nullptr;
  return device;
}

}  // namespace

std::string clock_event_text(unsigned long long reasons) {
  if (reasons == 0) return "none";
  static const std::vector<std::pair<unsigned long long, const char*>> names = {
      {0x1, "idle"},          {0x2, "application_clocks"},  {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},   {0x10, "sync_boost"},         {0x20, "sw_thermal"},
      {0x40, "hw_thermal"},   {0x80, "hw_power_brake"},     {0x100, "display_clocks"}};
  std::string text;
  unsigned long long known = 0;
  for (const auto& [bit, name] : names) {
    known |= bit;
    if (!(reasons & bit)) continue;
    if (!text.empty()) text += ',';
    text += name;
  }
  if (reasons & ~known) text += fmt::format("{}0x{:x}", text.empty() ? "" : ",", reasons & ~known);
  return text;
}

std::string state_text(const NvmlState& state) {
  std::string text;
  const auto add = [&](const std::string& part) {
    if (!text.empty()) text += ", ";
    text += part;
  };
  if (state.sm_clock_mhz) add(fmt::format("sm {} MHz", *state.sm_clock_mhz));
  if (state.power_w) add(fmt::format("{:.0f} W", *state.power_w));
  if (state.clock_event_reasons)
    add("limited by " + clock_event_text(*state.clock_event_reasons));
  return text;
}

struct NvmlMonitor::Library {
  NvmlLibrary nvml;
  nvml_device device = nullptr;
};

NvmlMonitor::NvmlMonitor(const std::string& pci_bus_id) noexcept {
  try {
    auto library = std::make_unique<Library>();
    if (!library->nvml.ready()) return;
    library->device = device_by_bus(library->nvml, pci_bus_id);
    if (library->device != nullptr) library_ = std::move(library);
  } catch (...) {
    library_.reset();  // no monitor: every read is empty
  }
}

NvmlMonitor::~NvmlMonitor() = default;

NvmlState NvmlMonitor::read() const noexcept {
  NvmlState state;
  if (!library_) return state;
  const NvmlLibrary& nvml = library_->nvml;
  nvml_device device = library_->device;
  if (auto clock = nvml.symbol<nvml_return (*)(nvml_device, int, unsigned*)>("nvmlDeviceGetClockInfo")) {
    unsigned mhz = 0;
    if (clock(device, kNvmlClockSm, &mhz) == 0) state.sm_clock_mhz = static_cast<int>(mhz);
  }
  if (auto power_mw = query_uint(nvml, device, "nvmlDeviceGetPowerUsage"))
    state.power_w = *power_mw / 1000.0;
  using reasons_fn = nvml_return (*)(nvml_device, unsigned long long*);
  auto reasons = nvml.symbol<reasons_fn>("nvmlDeviceGetCurrentClocksEventReasons");
  if (reasons == nullptr) reasons = nvml.symbol<reasons_fn>("nvmlDeviceGetCurrentClocksThrottleReasons");
  unsigned long long bits = 0;
  if (reasons != nullptr && reasons(device, &bits) == 0) state.clock_event_reasons = bits;
  return state;
}

void FastestSampleState::note(double sample_s, const NvmlMonitor* monitor) noexcept {
  if (monitor == nullptr || !(sample_s > 0) || (fastest_s_ > 0 && sample_s >= fastest_s_)) return;
  fastest_s_ = sample_s;
  state_ = monitor->read();
}

std::string FastestSampleState::text() const {
  const std::string state = state_text(state_);
  return state.empty() ? "" : "; at the fastest sample: " + state;
}

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
    nvml_device device = device_by_bus(nvml, pci_bus_id);
    if (device == nullptr) return facts;
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
