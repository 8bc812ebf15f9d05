#include "kernels/cpu/reference_check.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "kernels/cpu/random_fill.hpp"

namespace truepeak::cpu {
namespace {

double load(DType dtype, const void* base, std::int64_t index) {
  switch (dtype) {
    case DType::f32:
      return static_cast<const float*>(base)[index];
    case DType::bf16:
      return bf16_to_f32(static_cast<const std::uint16_t*>(base)[index]);
    case DType::int8:
      return static_cast<const std::int8_t*>(base)[index];
    default:
      throw Error(fmt::format("reference check: no loader for {}", to_string(dtype)));
  }
}

double load_output(DType dtype, const void* base, std::int64_t index) {
  if (dtype == DType::int8) {
    return static_cast<const std::int32_t*>(base)[index];
  }
  return load(dtype, base, index);
}

// Output indices to check: all of them when few, else an even spread that includes both ends.
std::vector<std::int64_t> sample_indices(std::int64_t count, std::int64_t max_samples) {
  std::vector<std::int64_t> indices;
  if (count <= max_samples) {
    for (std::int64_t i = 0; i < count; ++i) {
      indices.push_back(i);
    }
    return indices;
  }
  for (std::int64_t j = 0; j < max_samples; ++j) {
    // Stride by a large odd step so samples cover rows, columns and batches unevenly.
    indices.push_back(j == max_samples - 1
                          ? count - 1
                          : static_cast<std::int64_t>(
                                (static_cast<unsigned __int128>(j) * 0x9e3779b97f4a7c15ULL) %
                                static_cast<unsigned __int128>(count)));
  }
  indices.front() = 0;
  return indices;
}

void compare(DType dtype, const std::string& what, std::int64_t terms, double abs_sum,
             double reference, double actual) {
  const double tolerance = output_tolerance(dtype, terms, abs_sum, reference);
  // Written so that NaN fails.
  if (!(std::fabs(actual - reference) <= tolerance)) {
    throw CheckFailed(fmt::format("{}: got {:.9g}, reference {:.9g} (tolerance {:.3g})", what,
                                  actual, reference, tolerance));
  }
}

}  // namespace

double output_tolerance(DType dtype, std::int64_t terms, double abs_sum, double reference) {
  constexpr double kEpsF32 = 1.0 / (1 << 23);
  switch (dtype) {
    case DType::int8:
      return 0.0;
    case DType::f32:
      return 4.0 * std::sqrt(static_cast<double>(terms)) * kEpsF32 * abs_sum + 1e-30;
    case DType::bf16:
      return std::fabs(reference) / 128.0 +
             4.0 * std::sqrt(static_cast<double>(terms)) * kEpsF32 * abs_sum + 1e-30;
    default:
      throw Error(fmt::format("reference check: no tolerance for {}", to_string(dtype)));
  }
}

std::int64_t check_gemm(const GemmShape& shape, const void* a, const void* b, const void* c,
                        std::int64_t max_samples) {
  const std::int64_t m = shape.m, n = shape.n, k = shape.k;
  const auto indices = sample_indices(shape.batch * m * n, max_samples);
  for (const std::int64_t index : indices) {
    const std::int64_t batch = index / (m * n);
    const std::int64_t i = index / n % m;
    const std::int64_t j = index % n;
    double sum = 0, abs_sum = 0;
    for (std::int64_t p = 0; p < k; ++p) {
      const double product = load(shape.dtype, a, (batch * m + i) * k + p) *
                             load(shape.dtype, b, (batch * n + j) * k + p);
      sum += product;
      abs_sum += std::fabs(product);
    }
    compare(shape.dtype, fmt::format("gemm {} C[{}][{}][{}]", shape.str(), batch, i, j), k, abs_sum,
            sum, load_output(shape.dtype, c, index));
  }
  return static_cast<std::int64_t>(indices.size());
}

std::int64_t check_conv(const ConvShape& shape, const void* src, const void* weights,
                        const void* dst, std::int64_t max_samples) {
  const std::int64_t oh = shape.out_h(), ow = shape.out_w();
  const std::int64_t cg = shape.c / shape.groups, kg = shape.k / shape.groups;
  const auto indices = sample_indices(shape.n * shape.k * oh * ow, max_samples);
  for (const std::int64_t index : indices) {
    const std::int64_t x = index % ow;
    const std::int64_t y = index / ow % oh;
    const std::int64_t oc = index / (ow * oh) % shape.k;
    const std::int64_t image = index / (ow * oh * shape.k);
    const std::int64_t group = oc / kg;
    double sum = 0, abs_sum = 0;
    for (std::int64_t ic = 0; ic < cg; ++ic) {
      for (std::int64_t kh = 0; kh < shape.r; ++kh) {
        const std::int64_t iy = y * shape.stride - shape.pad + kh * shape.dilation;
        if (iy < 0 || iy >= shape.h) {
          continue;
        }
        for (std::int64_t kw = 0; kw < shape.s; ++kw) {
          const std::int64_t ix = x * shape.stride - shape.pad + kw * shape.dilation;
          if (ix < 0 || ix >= shape.w) {
            continue;
          }
          const std::int64_t channel = group * cg + ic;
          const double product =
              load(shape.dtype, src, ((image * shape.c + channel) * shape.h + iy) * shape.w + ix) *
              load(shape.dtype, weights, ((oc * cg + ic) * shape.r + kh) * shape.s + kw);
          sum += product;
          abs_sum += std::fabs(product);
        }
      }
    }
    compare(shape.dtype, fmt::format("conv {} dst[{}][{}][{}][{}]", shape.str(), image, oc, y, x),
            cg * shape.r * shape.s, abs_sum, sum, load_output(shape.dtype, dst, index));
  }
  return static_cast<std::int64_t>(indices.size());
}

}  // namespace truepeak::cpu
