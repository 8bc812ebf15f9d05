#include "kernels/cuda/gemm_layout.hpp"

#include <fmt/format.h>

#include <cmath>

namespace truepeak::cuda_detail {

TnLayout tn_layout(const GemmShape& shape) {
  const auto matrix = [&](std::int64_t rows, std::int64_t cols) {
    return LtMatrix{rows, cols, rows, shape.batch > 1 ? rows * cols : 0};
  };
  return {matrix(shape.k, shape.n), matrix(shape.k, shape.m), matrix(shape.n, shape.m)};
}

std::optional<std::string> gemm_alignment_problem(const GemmShape& shape) {
  if (shape.dtype == DType::fp8_e4m3 && shape.k % 16 != 0)
    return fmt::format(
        "gemm {}: cuBLASLt's fp8 kernels need k to be a multiple of 16 (16-byte aligned rows)",
        shape.str());
  if (shape.dtype == DType::int8 && shape.k % 4 != 0)
    return fmt::format(
        "gemm {}: cuBLASLt's int8 kernels need k to be a multiple of 4 (4-byte aligned rows)",
        shape.str());
  return std::nullopt;
}

double gemm_tolerance(DType dtype, double reference, double abs_sum) {
  double out_rel = 0, sum_rel = 0, floor = 1e-6;
  switch (dtype) {
    case DType::f64:
    case DType::f32:
      out_rel = 1e-6, sum_rel = 1e-4;
      break;
    case DType::tf32:  // inputs rounded to 10-bit mantissas: about 1e-3 per product
      out_rel = 1e-6, sum_rel = 4e-3;
      break;
    case DType::f16:  // f16 output: half an ulp is 2^-11
      out_rel = 2e-3, sum_rel = 1e-3;
      break;
    case DType::bf16:  // bf16 output: half an ulp is 2^-8
      out_rel = 8e-3, sum_rel = 1e-3;
      break;
    case DType::fp8_e4m3:  // bf16 output; Hopper's fp8 tensor cores accumulate with fewer bits
      out_rel = 8e-3, sum_rel = 2e-3;
      break;
    case DType::int8:  // s8 x s8 -> s32: exact, up to the comparison in double
      floor = 0.5;
      break;
  }
  return out_rel * std::fabs(reference) + sum_rel * abs_sum + floor;
}

}  // namespace truepeak::cuda_detail
