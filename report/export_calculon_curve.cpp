// Calculon looks a GEMM's efficiency up by its FLOP count alone, so the curve must say what a
// GEMM of that size reaches whatever its shape. Shapes of one FLOP count differ mostly in the
// bytes they move per FLOP, which Calculon charges apart (mem1, and roofline mode takes the longer
// of the two times): the curve keeps the rate the matrix engine reaches at each size, the fastest
// aligned shape's, and no size is slower than a smaller one.
#include <algorithm>
#include <cmath>
#include <map>

#include "core/dtype.hpp"
#include "report/export_calculon.hpp"

namespace truepeak::report::calculon {

bool aligned(const GemmShape& shape) {
  const std::int64_t bytes = dtype_bytes(shape.dtype);
  for (const std::int64_t dim : {shape.m, shape.n, shape.k}) {
    if (dim <= 0 || dim * bytes % 16 != 0) return false;
  }
  return true;
}

Curve gemm_curve(const std::vector<GemmPoint>& points, DType dtype, double peak) {
  std::map<double, double> fastest;  // GFLOP -> FLOP/s
  for (const auto& p : points) {
    if (p.shape.dtype != dtype || p.cold_weights || !aligned(p.shape) || p.flops_per_s <= 0)
      continue;
    auto& rate = fastest[p.shape.flops() / 1e9];
    rate = std::max(rate, p.flops_per_s);
  }
  // At each measured size, the best rate at that size or below.
  std::vector<std::pair<double, double>> steps;
  double best = 0;
  for (const auto& [gflop, rate] : fastest) {
    best = std::max(best, rate);
    steps.emplace_back(gflop, best);
  }
  Curve rising;  // ascending size
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (i > 0) {
      const auto [size0, rate0] = steps[i - 1];
      const auto [size1, rate1] = steps[i];
      const int fill =
          static_cast<int>(std::ceil(std::log(rate1 / rate0) / std::log(kMaxCurveStep) - 1e-9));
      for (int j = 1; j < fill; ++j) {
        const double t = static_cast<double>(j) / fill;
        rising.emplace_back(size0 * std::pow(size1 / size0, t), rate0 * std::pow(rate1 / rate0, t));
      }
    }
    // An entry that repeats the one below it changes no lookup.
    if (rising.empty() || steps[i].second > rising.back().second) rising.push_back(steps[i]);
  }
  Curve curve;
  for (auto it = rising.rbegin(); it != rising.rend(); ++it)
    curve.emplace_back(it->first, std::min(1.0, it->second / peak));
  if (!curve.empty()) curve.back().first = 0;
  return curve;
}

std::optional<double> lookup(const Curve& curve, double gflop) {
  for (const auto& [threshold, efficiency] : curve) {
    if (gflop >= threshold) return efficiency;
  }
  return std::nullopt;
}

}  // namespace truepeak::report::calculon
