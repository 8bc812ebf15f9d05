#include "core/read_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/error.hpp"

namespace truepeak {
namespace {

// Closes the descriptor it holds.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string size_text(std::uint64_t bytes) {
  return bytes % (1 << 20) == 0 ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} bytes", bytes);
}

}  // namespace

std::string read_input_file(const std::string& path, std::uint64_t max_bytes, std::string_view what) {
  const Descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw InputError(fmt::format("{}: cannot read {}: {}", path, what, std::strerror(errno)));
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0)
    throw InputError(fmt::format("{}: cannot read {}: {}", path, what, std::strerror(errno)));
  if (S_ISDIR(info.st_mode)) throw InputError(fmt::format("{}: cannot read {}: it is a directory", path, what));
  const auto too_large = [&] {
    return InputError(fmt::format("{}: larger than {}, the most a {} file may be", path, size_text(max_bytes), what));
  };
  std::string text;
  if (S_ISREG(info.st_mode)) {
    if (static_cast<std::uint64_t>(info.st_size) > max_bytes) throw too_large();
    text.reserve(static_cast<std::size_t>(info.st_size));
  }
  std::array<char, 1 << 16> buffer{};
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(fmt::format("{}: cannot read {}: {}", path, what, std::strerror(errno)));
    }
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) throw too_large();
    text.append(buffer.data(), static_cast<std::size_t>(n));
  }
  return text;
}

nlohmann::json read_json_file(const std::string& path, std::uint64_t max_bytes, std::string_view what) {
  const std::string text = read_input_file(path, max_bytes, what);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's message starts "[json.exception.parse_error.101] parse error at ...: ".
    const std::string message = e.what();
    const auto colon = message.find(": ");
    throw InputError(fmt::format("{}: not valid JSON (byte {}): {}", path, e.byte,
                                 colon == std::string::npos ? message : message.substr(colon + 2)));
  } catch (const nlohmann::json::exception& e) {
    // A number past the range of a double (out_of_range.406).
    throw InputError(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
}

}  // namespace truepeak
