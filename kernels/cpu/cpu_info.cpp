#include "kernels/cpu/cpu_info.hpp"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.hpp"

namespace truepeak::cpu {
namespace {

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return {};
  }
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

int to_int(std::string_view text, std::string_view what) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw Error(fmt::format("cannot parse {} from '{}'", what, text));
  }
  return value;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) {
        cpus.push_back(cpu);
      }
    }
  }
  return cpus;
}

std::string cpu_dir(int cpu) { return fmt::format("/sys/devices/system/cpu/cpu{}", cpu); }

}  // namespace

CpuinfoText parse_cpuinfo(std::string_view text) {
  CpuinfoText result;
  bool seen_processor = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) {
      continue;
    }
    const auto key = trim(line.substr(0, colon));
    const auto value = trim(line.substr(colon + 1));
    if (key == "processor") {
      if (seen_processor) {
        break;  // only the first block
      }
      seen_processor = true;
    } else if (key == "model name") {
      result.model_name = std::string(value);
    } else if (key == "vendor_id") {
      result.vendor = std::string(value);
    } else if (key == "cpu family" || key == "model") {
      int number = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
      if (ec == std::errc() && end == value.data() + value.size()) {
        (key == "model" ? result.model : result.family) = number;
      }
    } else if (key == "cpu MHz") {
      try {
        result.mhz = std::stod(std::string(value));
      } catch (const std::exception&) {
        result.mhz.reset();
      }
    } else if (key == "flags") {
      std::istringstream words{std::string(value)};
      for (std::string word; words >> word;) {
        result.flags.insert(word);
      }
    }
  }
  return result;
}

std::optional<std::int64_t> parse_meminfo(std::string_view text) {
  const auto at = text.find("MemTotal:");
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  std::istringstream line{std::string(text.substr(at + 9, 64))};
  std::int64_t value = 0;
  std::string unit;
  if (!(line >> value >> unit) || unit != "kB") {
    return std::nullopt;
  }
  return value * 1024;
}

std::vector<int> parse_cpu_list(std::string_view text) {
  std::vector<int> cpus;
  text = trim(text);
  while (!text.empty()) {
    const auto comma = text.find(',');
    const auto item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      cpus.push_back(to_int(item, "cpu list"));
    } else {
      const int first = to_int(item.substr(0, dash), "cpu list");
      const int last = to_int(item.substr(dash + 1), "cpu list");
      if (last < first) {
        throw Error(fmt::format("cannot parse cpu list range '{}'", item));
      }
      for (int cpu = first; cpu <= last; ++cpu) {
        cpus.push_back(cpu);
      }
    }
  }
  return cpus;
}

std::int64_t parse_cache_size(std::string_view text) {
  text = trim(text);
  if (text.empty()) {
    throw Error("cannot parse an empty cache size");
  }
  std::int64_t scale = 1;
  switch (text.back()) {
    case 'K':
      scale = 1024;
      break;
    case 'M':
      scale = 1024 * 1024;
      break;
    case 'G':
      scale = 1024 * 1024 * 1024;
      break;
    default:
      break;
  }
  if (scale != 1) {
    text.remove_suffix(1);
  }
  return static_cast<std::int64_t>(to_int(text, "cache size")) * scale;
}

CpuInfo read_cpu_info(int threads) {
  CpuInfo info;
  if (auto text = read_text("/proc/cpuinfo")) {
    auto parsed = parse_cpuinfo(*text);
    info.model_name = std::move(parsed.model_name);
    info.vendor = std::move(parsed.vendor);
    info.family = parsed.family;
    info.model = parsed.model;
    info.flags = std::move(parsed.flags);
    info.cpuinfo_mhz = parsed.mhz;
  }
  if (auto text = read_text("/proc/meminfo")) {
    info.memory_bytes = parse_meminfo(*text);
  }

  // One CPU per core: a CPU is the representative of its core when it is the first allowed CPU
  // among its hyper-thread siblings.
  const auto cpus = allowed_cpus();
  info.logical_cpus = static_cast<int>(cpus.size());
  std::set<std::vector<int>> cores_seen;
  for (const int cpu : cpus) {
    std::vector<int> siblings{cpu};
    if (auto text = read_text(cpu_dir(cpu) + "/topology/thread_siblings_list")) {
      siblings = parse_cpu_list(*text);
    }
    if (cores_seen.insert(siblings).second) {
      info.one_cpu_per_core.push_back(cpu);
    }
  }
  info.physical_cores = static_cast<int>(info.one_cpu_per_core.size());
  if (info.one_cpu_per_core.empty()) {
    return info;
  }

  const int first_cpu = info.one_cpu_per_core.front();
  if (auto text = read_text(cpu_dir(first_cpu) + "/cpufreq/cpuinfo_max_freq")) {
    try {
      info.max_mhz = std::stod(*text) / 1000.0;  // kHz
    } catch (const std::exception&) {
      info.max_mhz.reset();
    }
  }

  const int used = threads > 0 ? std::min<int>(threads, info.physical_cores) : info.physical_cores;
  for (int index = 0;; ++index) {
    const std::string dir = fmt::format("{}/cache/index{}", cpu_dir(first_cpu), index);
    const auto level = read_text(dir + "/level");
    const auto size = read_text(dir + "/size");
    if (!level || !size) {
      break;
    }
    CacheInfo cache;
    cache.level = to_int(trim(*level), "cache level");
    cache.type = std::string(trim(read_text(dir + "/type").value_or("Unified")));
    cache.bytes = parse_cache_size(*size);
    cache.shared_cpu_list = std::string(trim(read_text(dir + "/shared_cpu_list").value_or("")));
    // Distinct instances of this cache over the CPUs in use (one per core, `used` of them).
    std::set<std::string> instances;
    for (int i = 0; i < used; ++i) {
      const std::string other =
          fmt::format("{}/cache/index{}/shared_cpu_list", cpu_dir(info.one_cpu_per_core[i]), index);
      instances.insert(std::string(trim(read_text(other).value_or(std::to_string(i)))));
    }
    cache.instances_used = std::max<int>(1, static_cast<int>(instances.size()));
    info.caches.push_back(std::move(cache));
  }
  std::stable_sort(info.caches.begin(), info.caches.end(),
                   [](const CacheInfo& a, const CacheInfo& b) { return a.level < b.level; });
  return info;
}

}  // namespace truepeak::cpu
