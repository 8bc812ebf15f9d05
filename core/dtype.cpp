#include "core/dtype.hpp"

#include <algorithm>
#include <string>

#include "core/text.hpp"

namespace truepeak {

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::f64: return "f64";
    case DType::f32: return "f32";
    case DType::tf32: return "tf32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::fp8_e4m3: return "fp8";
    case DType::int8: return "int8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view text) {
  const std::string t = ascii_lower(std::string(text));
  if (t == "f64" || t == "fp64" || t == "float64" || t == "double") return DType::f64;
  if (t == "f32" || t == "fp32" || t == "float32" || t == "float") return DType::f32;
  if (t == "tf32") return DType::tf32;
  if (t == "f16" || t == "fp16" || t == "float16" || t == "half") return DType::f16;
  if (t == "bf16" || t == "bfloat16") return DType::bf16;
  if (t == "fp8" || t == "f8" || t == "e4m3" || t == "fp8_e4m3") return DType::fp8_e4m3;
  if (t == "int8" || t == "s8" || t == "i8") return DType::int8;
  return std::nullopt;
}

int dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::f64: return 8;
    case DType::f32:
    case DType::tf32: return 4;
    case DType::f16:
    case DType::bf16: return 2;
    case DType::fp8_e4m3:
    case DType::int8: return 1;
  }
  return 4;
}

}  // namespace truepeak
