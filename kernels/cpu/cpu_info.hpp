// What Linux says about this CPU: model, ISA flags, topology, clocks, caches and memory size, read
// from /proc/cpuinfo, /proc/meminfo and /sys. The parsers take text so tests can feed them
// synthetic files; read_cpu_info() reads the real ones.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace truepeak::cpu {

struct CacheInfo {
  int level = 0;
  std::string type;             // "Data", "Instruction", "Unified"
  std::int64_t bytes = 0;       // one instance
  std::string shared_cpu_list;  // of the first CPU used, as /sys prints it ("0-1")
  int instances_used = 1;       // distinct instances that the CPUs in use span
};

struct CpuInfo {
  std::string model_name;
  std::string vendor;                 // "vendor_id": GenuineIntel, AuthenticAMD, ...
  std::optional<int> family, model;   // "cpu family" and "model"
  std::set<std::string> flags;
  int logical_cpus = 0;               // CPUs this process may run on
  int physical_cores = 0;             // of those, distinct cores
  std::vector<int> one_cpu_per_core;  // the first CPU of each core, in order
  std::optional<double> cpuinfo_mhz;  // "cpu MHz" of the first CPU: current clock (base on a VM)
  std::optional<double> max_mhz;      // cpufreq cpuinfo_max_freq, where readable
  std::vector<CacheInfo> caches;      // of the first CPU, innermost first, instruction caches too
  std::optional<std::int64_t> memory_bytes;  // MemTotal
};

// "cpu MHz", "model name", "vendor_id", "cpu family", "model" and "flags" of the first processor
// block.
struct CpuinfoText {
  std::string model_name;
  std::string vendor;
  std::optional<int> family, model;
  std::set<std::string> flags;
  std::optional<double> mhz;
};
CpuinfoText parse_cpuinfo(std::string_view text);
// MemTotal in bytes.
std::optional<std::int64_t> parse_meminfo(std::string_view text);
// "0-3,8,10-11" -> {0,1,2,3,8,10,11}. Throws Error on malformed text.
std::vector<int> parse_cpu_list(std::string_view text);
// "48K", "2048K", "260M" (sysfs cache sizes) -> bytes. Throws Error on malformed text.
std::int64_t parse_cache_size(std::string_view text);

// Reads everything for the CPUs this process may use; `threads` CPUs (one per core) are assumed
// in use when counting cache instances.
CpuInfo read_cpu_info(int threads);

}  // namespace truepeak::cpu
