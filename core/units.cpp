#include "core/units.hpp"

#include <cctype>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"

namespace truepeak {
namespace {

// Picks the largest decimal prefix that keeps the mantissa >= 1.
std::string format_decimal(double value, const char* unit) {
  static constexpr struct {
    double scale;
    const char* prefix;
  } kPrefixes[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}};
  if (!std::isfinite(value)) return fmt::format("{} {}", value, unit);
  for (const auto& p : kPrefixes) {
    if (std::fabs(value) >= p.scale) {
      return fmt::format("{:.3g} {}{}", value / p.scale, p.prefix, unit);
    }
  }
  return fmt::format("{:.3g} {}", value, unit);
}

}  // namespace

std::string format_flops_per_s(double flops_per_s) { return format_decimal(flops_per_s, "FLOP/s"); }

std::string format_Bps(double bytes_per_s) { return format_decimal(bytes_per_s, "B/s"); }

std::string format_bytes(double bytes) {
  static constexpr struct {
    double scale;
    const char* unit;
  } kUnits[] = {{double(kGiB), "GiB"}, {double(kMiB), "MiB"}, {double(kKiB), "KiB"}};
  for (const auto& u : kUnits) {
    if (std::fabs(bytes) >= u.scale) return fmt::format("{:.4g} {}", bytes / u.scale, u.unit);
  }
  return fmt::format("{:.0f} B", bytes);
}

std::string format_time_s(double seconds) {
  const double a = std::fabs(seconds);
  if (a >= 1) return fmt::format("{:.3g} s", seconds);
  if (a >= 1e-3) return fmt::format("{:.3g} ms", seconds * 1e3);
  if (a >= 1e-6) return fmt::format("{:.3g} us", seconds * 1e6);
  return fmt::format("{:.3g} ns", seconds * 1e9);
}

std::string format_percent(double ratio) { return fmt::format("{:.1f}%", ratio * 100); }

std::int64_t parse_bytes(const std::string& text) {
  std::size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw InputError(fmt::format("'{}' is not a size: expected a number with an optional K, M or G suffix", text));
  }
  std::string suffix = text.substr(pos);
  for (auto& ch : suffix) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  double scale = 1;
  if (suffix.empty() || suffix == "B") {
    scale = 1;
  } else if (suffix == "K" || suffix == "KB" || suffix == "KIB") {
    scale = double(kKiB);
  } else if (suffix == "M" || suffix == "MB" || suffix == "MIB") {
    scale = double(kMiB);
  } else if (suffix == "G" || suffix == "GB" || suffix == "GIB") {
    scale = double(kGiB);
  } else {
    throw InputError(fmt::format("'{}' is not a size: unknown suffix '{}' (use K, M or G)", text, text.substr(pos)));
  }
  if (value < 0) throw InputError(fmt::format("'{}' is not a size: it is negative", text));
  return static_cast<std::int64_t>(std::llround(value * scale));
}

}  // namespace truepeak
