// Data types of the measured operations, with their canonical names as used in profiles and on
// the command line.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace truepeak {

enum class DType { f64, f32, tf32, f16, bf16, fp8_e4m3, int8 };

// Canonical lower-case name: "f64", "f32", "tf32", "f16", "bf16", "fp8", "int8".
std::string_view to_string(DType dtype);
// Accepts the canonical names and common aliases ("fp32", "float32", "fp16", "half", "s8", "e4m3").
std::optional<DType> parse_dtype(std::string_view text);
// Size of one element in memory (tf32 is stored as f32).
int dtype_bytes(DType dtype);

}  // namespace truepeak
