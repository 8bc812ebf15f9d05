#include "calibrate/machine.hpp"

#include <chrono>
#include <ctime>
#include <fstream>
#include <string>
#include <sys/utsname.h>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

namespace truepeak {
namespace {

// Value of the first "key: value" (or key=value) line starting with `key` in a /proc-style file.
std::string read_key(const std::string& path, const std::string& key, char separator) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const auto pos = line.find(separator);
    if (pos == std::string::npos) continue;
    auto value = line.substr(pos + 1);
    const auto first = value.find_first_not_of(" \t\"");
    const auto last = value.find_last_not_of(" \t\"");
    return first == std::string::npos ? std::string() : value.substr(first, last - first + 1);
  }
  return {};
}

}  // namespace

Machine read_machine(const std::string& label) {
  Machine m;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) m.hostname = host;
  m.label = label.empty() ? m.hostname : label;
  std::string os = read_key("/etc/os-release", "PRETTY_NAME", '=');
  utsname u{};
  if (uname(&u) == 0) os += fmt::format("{}{} {} {}", os.empty() ? "" : ", ", u.sysname, u.release, u.machine);
  m.os = os;
  m.cpu_model = read_key("/proc/cpuinfo", "model name", ':');
  m.cpu_cores = static_cast<int>(std::thread::hardware_concurrency());
  const auto mem_kib = read_key("/proc/meminfo", "MemTotal", ':');
  if (!mem_kib.empty()) m.memory_bytes = std::stoll(mem_kib) * 1024;
  return m;
}

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace truepeak
