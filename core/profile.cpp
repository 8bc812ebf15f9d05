// The profile's schema version, its device lookup, and its files: read whole, written atomically.
#include "core/profile.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/read_file.hpp"

namespace truepeak {

std::string schema_version_string() { return fmt::format("{}.{}", kSchemaMajor, kSchemaMinor); }

const Device* Profile::find_device(const std::string& id) const {
  for (const auto& d : devices) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

Profile read_profile(const std::string& path) {
  return profile_from_json(read_json_file(path, kMaxProfileBytes, "profile"), path);
}

void write_file_atomic(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InputError(fmt::format("{}: cannot write: directory '{}' does not exist", path, dir.string()));
  }
  const auto tmp = fs::path(path + fmt::format(".tmp{}", ::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
    out << text;
    out.flush();
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      throw InputError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw InputError(fmt::format("{}: cannot write: {}", path, ec.message()));
  }
}

void write_profile(const std::string& path, const Profile& profile) {
  write_file_atomic(path, to_json(profile).dump(2) + "\n");
}

}  // namespace truepeak
