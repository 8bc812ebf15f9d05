// SI units and human-readable formatting. GB means 1e9 bytes everywhere in output.
#pragma once

#include <cstdint>
#include <string>

namespace truepeak {

inline constexpr double kKilo = 1e3;
inline constexpr double kMega = 1e6;
inline constexpr double kGiga = 1e9;
inline constexpr double kTera = 1e12;
inline constexpr std::int64_t kKiB = 1024;
inline constexpr std::int64_t kMiB = 1024 * kKiB;
inline constexpr std::int64_t kGiB = 1024 * kMiB;

// "1.23 TFLOP/s", "456.7 GFLOP/s"
std::string format_flops_per_s(double flops_per_s);
// "3.91 TB/s", "12.3 GB/s" (decimal units)
std::string format_Bps(double bytes_per_s);
// "48 KiB", "2 MiB", "1.5 GiB" (binary units: sizes of buffers and caches)
std::string format_bytes(double bytes);
// "2.50 us", "1.20 ms", "3.4 s"
std::string format_time_s(double seconds);
// "12.5%"
std::string format_percent(double ratio);

// Parses "4096", "48K", "48KiB", "2M", "1G" (binary multiples) into bytes. Throws InputError.
std::int64_t parse_bytes(const std::string& text);

}  // namespace truepeak
