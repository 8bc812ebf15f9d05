#include "core/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "core/error.hpp"

namespace truepeak {
namespace {

[[noreturn]] void fail(std::string_view flag, const std::string& path, const std::string& why) {
  throw InputError(fmt::format("{} {}: {}", flag, path, why));
}

// The system's reason for the last failure, read at once (a later call may change errno).
std::string reason(int error) { return error != 0 ? std::strerror(error) : "unknown error"; }

}  // namespace

void check_output_path(const std::string& path, std::string_view flag) {
  if (is_stdout_path(path)) return;
  if (path.empty()) fail(flag, "''", "an empty path; give a file, or - for standard output");
  const std::filesystem::path target(path);
  struct stat info {};
  const bool exists = ::stat(path.c_str(), &info) == 0;  // through a symbolic link
  if (path.back() == '/' || (exists && S_ISDIR(info.st_mode)))
    fail(flag, path, "is a directory; give a file in it, or - for standard output");
  if (exists && !S_ISREG(info.st_mode))
    fail(flag, path,
         "not a regular file (a device, FIFO or socket); give a regular file, or - for standard "
         "output");
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    fail(flag, path, fmt::format("cannot write: directory '{}' does not exist", dir.string()));
}

void write_output(const std::string& path, const std::string& text, std::string_view flag) {
  check_output_path(path, flag);
  if (is_stdout_path(path)) {
    std::cout << text;
    return;
  }
  const std::string tmp = fmt::format("{}.tmp{}", path, ::getpid());
  // A stale file of that name (a writer killed before its rename) goes first: O_EXCL then never
  // writes through a link someone left there.
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail(flag, path, "cannot write: " + reason(errno));
  const auto abandon = [&](int error) {
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(flag, path, "cannot write: " + reason(error));
  };
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) abandon(n < 0 ? errno : ENOSPC);
    written += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    fail(flag, path, "cannot write: " + reason(error));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    fail(flag, path, "cannot write: " + reason(error));
  }
}

}  // namespace truepeak
