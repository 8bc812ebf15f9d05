#include "calibrate/fits.hpp"

#include <algorithm>

namespace truepeak {

std::optional<LatencyBandwidth> fit_latency_bandwidth(const std::vector<TransferSample>& points) {
  // Weighted least squares of t = a + b x with weights w = 1 / t^2 (relative error).
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  int distinct = 0;
  std::int64_t first_bytes = -1;
  for (const auto& p : points) {
    if (p.time_s <= 0) continue;
    const double w = 1.0 / (p.time_s * p.time_s);
    const double x = double(p.bytes);
    sw += w;
    sx += w * x;
    sy += w * p.time_s;
    sxx += w * x * x;
    sxy += w * x * p.time_s;
    if (first_bytes < 0) first_bytes = p.bytes;
    if (p.bytes != first_bytes) distinct = 2;
  }
  if (distinct < 2) return std::nullopt;
  const double denom = sw * sxx - sx * sx;
  if (denom <= 0) return std::nullopt;
  const double slope = (sw * sxy - sx * sy) / denom;
  const double intercept = (sy - slope * sx) / sw;
  if (slope <= 0) return std::nullopt;
  return LatencyBandwidth{std::max(0.0, intercept), 1.0 / slope};
}

std::vector<LevelBandwidth> level_bandwidths(const std::vector<MemoryLevel>& levels,
                                             const std::vector<MemoryPoint>& sweep, const std::string& kernel) {
  std::vector<const MemoryPoint*> points;
  for (const auto& p : sweep) {
    if (p.kernel == kernel) points.push_back(&p);
  }
  std::vector<LevelBandwidth> out;
  if (points.empty()) return out;
  auto best_in = [&](double lo, double hi) {
    double best = 0;
    for (const auto* p : points) {
      if (double(p->bytes) > lo && double(p->bytes) <= hi) best = std::max(best, p->Bps);
    }
    return best;
  };

  double previous = 0;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const auto& level = levels[i];
    const bool is_memory = i + 1 == levels.size() || !level.bytes;
    double bps = 0;
    if (is_memory) {
      bps = best_in(4 * previous, 1e300);
      if (bps == 0) {
        const auto* largest = *std::max_element(points.begin(), points.end(),
                                                [](auto* a, auto* b) { return a->bytes < b->bytes; });
        if (double(largest->bytes) > previous) bps = largest->Bps;
      }
    } else {
      const double capacity = double(*level.bytes);
      bps = best_in(2 * previous, capacity / 2);
      if (bps == 0) bps = best_in(previous, capacity);
      previous = capacity;
    }
    if (bps > 0) out.push_back({level.name, level.bytes, bps});
    if (is_memory) break;
  }
  return out;
}

}  // namespace truepeak
