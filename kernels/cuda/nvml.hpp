// What NVML adds to the CUDA runtime's device facts (maximum clocks, PCIe link, driver version).
// NVML ships with the driver, not the toolkit, so it is loaded at run time with dlopen; every
// field stays empty where the library or the query is missing.
#pragma once

#include <memory>
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

// The GPU's state at one moment. Read right after a timed sample, it says what the work ran at:
// the SM clock stays at its working value for milliseconds after the work ends.
struct NvmlState {
  std::optional<int> sm_clock_mhz;
  std::optional<double> power_w;
  std::optional<unsigned long long> clock_event_reasons;  // nvmlClocksEventReason* bits
};

// "sm 1755 MHz, 690 W, limited by sw_power_cap": what is known of `state`; empty if nothing is.
std::string state_text(const NvmlState& state);
// The names of nvmlClocksEventReason bits, comma-separated ("none" for 0, "idle" for 0x1).
std::string clock_event_text(unsigned long long reasons);

// Reads the state of one GPU; every read is empty where NVML or the query is missing.
class NvmlMonitor {
 public:
  explicit NvmlMonitor(const std::string& pci_bus_id) noexcept;
  ~NvmlMonitor();
  NvmlMonitor(const NvmlMonitor&) = delete;
  NvmlMonitor& operator=(const NvmlMonitor&) = delete;
  NvmlState read() const noexcept;

 private:
  struct Library;
  std::unique_ptr<Library> library_;
};

// The GPU's state at the fastest of a kernel's samples: its capability figure's conditions.
class FastestSampleState {
 public:
  // After each timed sample; reads the monitor only when this sample is the fastest so far.
  void note(double sample_s, const NvmlMonitor* monitor) noexcept;
  // "; at the fastest sample: sm 1755 MHz, 690 W, limited by none", or "" when nothing was read.
  std::string text() const;

 private:
  double fastest_s_ = 0;
  NvmlState state_;
};

}  // namespace truepeak::cuda_detail
