// Reference checks for the library kernels: outputs (all of them for small problems, a spread
// sample otherwise) are compared with a naive double-precision computation from the same inputs.
// Operands are plain (GEMM: A and C row-major, B as a linear layer's weights [n][k]) or NCHW /
// (G)OIHW (convolution) in their own data type:
// f32 as float, bf16 as uint16_t bits, int8 inputs as int8_t with int32 output. Each function
// throws CheckFailed naming the first wrong element; it returns the number of elements checked.
#pragma once

#include <cstdint>

#include "core/shapes.hpp"

namespace truepeak::cpu {

// Tolerance of one output: the error allowed for a sum of `terms` products whose absolute values
// sum to `abs_sum`, with the result `reference`. Exact for int8 (int32 accumulation); for the
// floating types the f32 accumulation error grows like sqrt(terms) x eps x abs_sum, and bf16
// output adds its rounding (2^-8 relative).
double output_tolerance(DType dtype, std::int64_t terms, double abs_sum, double reference);

// A = [batch][m][k], B stored as a linear layer's weights [batch][n][k], C = [batch][m][n].
std::int64_t check_gemm(const GemmShape& shape, const void* a, const void* b, const void* c,
                        std::int64_t max_samples = 2048);

// src = NCHW, weights = [groups][k/groups][c/groups][r][s], dst = NCHW (N, K, OH, OW).
std::int64_t check_conv(const ConvShape& shape, const void* src, const void* weights,
                        const void* dst, std::int64_t max_samples = 2048);

}  // namespace truepeak::cpu
