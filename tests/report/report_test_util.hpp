// Shared by the report tests: fixture paths and file helpers.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/profile.hpp"

namespace truepeak::report::test {

inline std::string data_path(const std::string& name) {
  return std::string(TRUEPEAK_SOURCE_DIR) + "/tests/report/data/" + name;
}

inline Profile cpu_fixture() { return read_profile(data_path("profile_cpu.json")); }
inline Profile gpu_fixture() { return read_profile(data_path("profile_gpu.json")); }

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(read_text(path));
}

// A committed profile under results/, e.g. "nvidia-h200/nvidia-h200-default.json".
inline Profile committed_profile(const std::string& name) {
  return read_profile(std::string(TRUEPEAK_SOURCE_DIR) + "/results/" + name);
}

// Lines (an exporter's notes) as one text, each ended by a newline.
inline std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace truepeak::report::test
