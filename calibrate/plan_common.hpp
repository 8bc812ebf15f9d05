// Helpers shared by the per-device plans (plan_cpu.cpp, plan_gpu.cpp): building a conv shape from
// a layer's usual parameters and a stopping rule from its budget.
#pragma once

#include <cstdint>

#include "core/backend.hpp"
#include "core/stats.hpp"

namespace truepeak::plan_detail {

// A square-image, square-filter conv layer with no dilation.
inline ConvShape conv(DType dtype, std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t k,
                      std::int64_t rs, std::int64_t stride, std::int64_t pad,
                      std::int64_t groups = 1) {
  ConvShape shape;
  shape.dtype = dtype;
  shape.n = n;
  shape.c = c;
  shape.h = hw;
  shape.w = hw;
  shape.k = k;
  shape.r = rs;
  shape.s = rs;
  shape.stride = stride;
  shape.pad = pad;
  shape.dilation = 1;
  shape.groups = groups;
  return shape;
}

inline StopRule rule(int min_samples, double budget_s, int stable_window, int warmup_runs = 2,
                     double warmup_s = 0.02) {
  StopRule r;
  r.min_samples = min_samples;
  r.budget_s = budget_s;
  r.stable_window = stable_window;
  r.target_cv = 0.01;
  r.min_rel_gain = 0.005;
  r.warmup_runs = warmup_runs;
  r.warmup_s = warmup_s;
  return r;
}

}  // namespace truepeak::plan_detail
