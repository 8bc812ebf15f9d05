// How a GemmShape maps onto cuBLASLt's column-major matrices, which shapes its FP8 and int8
// kernels accept, and how far a checked output may be from the reference. Pure host code, so
// it is unit-tested without a GPU.
//
// GemmShape is C[m][n] = X[m][k] * W[n][k]^T, all row-major (nn.Linear's layout, "TN"). cuBLASLt
// is column-major: a row-major [r][c] array is a column-major c x r matrix with ld = c. So its
// A is W read as k x n (ld k) with TRANSA = T, its B is X read as k x m (ld k) with TRANSB = N,
// and its D = A^T B is n x m with ld n: C row-major [m][n].
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/shapes.hpp"

namespace truepeak::cuda_detail {

// One cublasLtMatrixLayout: rows x cols, column-major, leading dimension and batch stride in
// elements (the stride is set on every layout when batch > 1, C and D included).
struct LtMatrix {
  std::int64_t rows = 0, cols = 0, ld = 0, batch_stride = 0;
};

struct TnLayout {
  LtMatrix a;  // W, op T
  LtMatrix b;  // X, op N
  LtMatrix c;  // C and D
};

TnLayout tn_layout(const GemmShape& shape);

// Why cuBLASLt cannot run this shape in this dtype, or nullopt. FP8 kernels need 16-byte
// aligned leading dimensions of A and B (k a multiple of 16); int8 (IMMA) kernels need 4-byte
// aligned ones (k a multiple of 4).
std::optional<std::string> gemm_alignment_problem(const GemmShape& shape);

// Largest accepted |got - reference| for one output element: rounding of the output type
// relative to |reference|, plus input rounding and accumulation relative to sum |x*w|. int8 is
// exact.
double gemm_tolerance(DType dtype, double reference, double abs_sum);

}  // namespace truepeak::cuda_detail
