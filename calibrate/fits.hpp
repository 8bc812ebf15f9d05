// Fits over measured points: transfer latency + bandwidth, bandwidth per memory level.
#pragma once

#include <optional>
#include <vector>

#include "core/backend.hpp"
#include "core/profile.hpp"

namespace truepeak {

// Fits time = latency + bytes / Bps, weighting each point by 1/time^2 so that small transfers
// (which set the latency) count as much as large ones (which set the bandwidth). A negative
// intercept (latency under the timer's resolution) is reported as 0.
struct LatencyBandwidth {
  double latency_s = 0;
  double Bps = 0;
};
std::optional<LatencyBandwidth> fit_latency_bandwidth(const std::vector<TransferSample>& points);

// Bandwidth of each memory level from a working-set sweep of one kernel. A level's figure is the
// best rate among the points whose working set lies in that level and clearly outside the one
// before it: bytes in (2 x previous capacity, capacity / 2]; if no point lies there, any point in
// (previous capacity, capacity]. Device memory (the last level, or a level with unknown size)
// takes the points at or above 4 x the last cache's capacity, else the largest point. Levels
// without points are left out.
std::vector<LevelBandwidth> level_bandwidths(const std::vector<MemoryLevel>& levels,
                                             const std::vector<MemoryPoint>& sweep, const std::string& kernel);

}  // namespace truepeak
