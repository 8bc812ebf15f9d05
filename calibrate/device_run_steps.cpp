// DeviceRun's measurement steps: the first look at every point of the plan, FMA to transfers.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "calibrate/device_run.hpp"
#include "calibrate/fits.hpp"
#include "core/units.hpp"

namespace truepeak::driver_detail {
namespace {

// A convolution point's name for progress, the second look and the peak watch: the layout asked
// for, and the one that ran where they differ ("any" usually runs blocked, so "any->blocked" and
// "blocked" are two points).
std::string layout_label(ConvLayout requested, const std::string& ran) {
  const std::string asked(to_string(requested));
  return asked == ran ? ran : asked + "->" + ran;
}

}  // namespace

void DeviceRun::measure_fma() {
  for (const auto dtype : plan_.fma_dtypes) {
    const auto name = std::string(to_string(dtype));
    const auto make = [this, dtype] { return backend_.fma(dtype); };
    if (auto m = point("fma " + name, "fma " + name, plan_.fma_rule, make)) {
      device_.peaks.vector_flops_per_s[name] = m->best_flops_per_s();
      progress("fma " + name, format_flops_per_s(m->best_flops_per_s()));
      const double flops = m->flops;
      watch_.offer("fma " + name, "fma " + name, flops, make, std::move(m->kernel), m->samples,
                   [this, name, flops](const Summary& s, const std::string&, const std::string&) {
                     auto& peak = device_.peaks.vector_flops_per_s[name];
                     peak = std::max(peak, flops / s.min_s);
                   });
    }
  }
}

// The clock, in MHz, into the device's properties (the fastest seen so far).
void DeviceRun::note_clock(double hz) {
  auto& mhz = device_.properties["measured_frequency_mhz"];
  if (!mhz.is_number() || mhz.get<double>() < hz / 1e6) mhz = hz / 1e6;
}

void DeviceRun::measure_clock() {
  if (!plan_.measure_clock) return;
  const auto make = [this] { return backend_.clock(); };
  if (auto m = point("clock", "clock", plan_.fma_rule, make)) {
    note_clock(m->best_flops_per_s());
    progress("clock", format_clock(m->best_flops_per_s()));
    const double adds = m->flops;
    watch_.offer(kClockCategory, "clock", adds, make, std::move(m->kernel), m->samples,
                 [this, adds](const Summary& s, const std::string&, const std::string&) { note_clock(adds / s.min_s); });
  }
}

std::string DeviceRun::format_clock(double hz) { return fmt::format("{:.0f} MHz", hz / 1e6); }

void DeviceRun::measure_overhead() {
  if (auto m = point("overhead", "per-op overhead", plan_.overhead_rule, [&] { return backend_.tiny_op(); })) {
    device_.overhead_op_s = m->summary.min_s;
    progress("per-op overhead", format_time_s(m->summary.min_s));
  }
  if (auto m = point("graph overhead", "per-op overhead in a graph", plan_.overhead_rule,
                     [&] { return backend_.graph_tiny_op(); })) {
    device_.overhead_graph_op_s = m->summary.min_s;
    progress("per-op overhead in a graph", format_time_s(m->summary.min_s));
  }
}

void DeviceRun::measure_vector_ops() {
  group_ = "vector_op";
  for (const auto& shape : plan_.vector_ops) {
    const auto what = "vector_op " + shape.str();
    // By dtype: the ops of a dtype the library cannot run here are one skipped entry per reason.
    const auto klass = fmt::format("vector_op {}", to_string(shape.dtype));
    const auto make = [this, shape = shape] { return backend_.vector_op(shape); };
    if (auto m = point(klass, what, plan_.vector_op_rule, make)) {
      const double rate = shape.elements() / m->summary.min_s;
      device_.vector_ops.push_back({shape.op, shape.dtype, shape.rows, shape.cols,
                                    timing_of(m->summary), rate, m->impl});
      progress(what, format_elements_per_s(rate));
      const std::size_t i = device_.vector_ops.size() - 1;
      keep_for_revisit(klass, what, make, Revisit::Kind::vector_op, i, *m, static_cast<double>(shape.elements()));
      // An op over main memory: timed again with main memory's fast spells.
      const auto from = device_memory_from(backend_.describe().levels);
      if (from && shape.bytes() >= static_cast<double>(*from) && holds_companion(shape.bytes())) {
        const double elements = shape.elements();
        watch_.accompany(kMemoryCategory, what, elements, std::move(m->kernel), m->samples,
                         [this, i, elements](const Summary& s, const std::string&, const std::string&) {
                           auto& p = device_.vector_ops[i];
                           if (elements / s.min_s > p.elements_per_s) {
                             // The typical time stays the lowest median of the point's looks.
                             const double typical = p.timing.typical_s;
                             p.elements_per_s = elements / s.min_s;
                             p.timing = timing_of(s);
                             if (typical > 0) p.timing.typical_s = std::min(typical, p.timing.typical_s);
                           }
                         }, m->summary.typical_s);
      }
    } else {
      no_revisit();
    }
  }
}

void DeviceRun::measure_gemm() {
  group_ = "gemm";
  for (const auto& shape : plan_.gemm) {
    const auto what = "gemm " + shape.str();
    const auto klass = fmt::format("gemm {}", to_string(shape.dtype));
    const auto make = [this, shape] { return backend_.gemm(shape); };
    if (auto m = point(klass, what, plan_.gemm_rule, make)) {
      GemmPoint p{shape, timing_of(m->summary), m->best_flops_per_s(), m->impl, m->layout};
      const auto dtype = std::string(to_string(shape.dtype));
      auto& peak = device_.peaks.flops_per_s[dtype];
      peak = std::max(peak, p.flops_per_s);
      device_.gemm.push_back(std::move(p));
      progress(what, format_flops_per_s(m->best_flops_per_s()));
      const std::size_t i = device_.gemm.size() - 1;
      const double flops = m->flops;
      keep_for_revisit(klass, what, make, Revisit::Kind::gemm, i, *m);
      watch_.offer(klass, what, flops, make, std::move(m->kernel), m->samples,
                   [this, i, dtype, flops](const Summary& s, const std::string& impl, const std::string& layout) {
                     set_figures(device_.gemm[i], flops, s, impl, layout);
                     auto& best = device_.peaks.flops_per_s[dtype];
                     best = std::max(best, device_.gemm[i].flops_per_s);
                   }, m->summary.typical_s);
    } else {
      no_revisit();
    }
  }
  // Cold weights: their own points, never a peak.
  for (const auto& shape : plan_.gemm_cold) {
    const auto what = "gemm " + shape.str() + " cold weights";
    const auto klass = fmt::format("gemm {}", to_string(shape.dtype));
    const auto make = [this, shape] { return backend_.gemm_cold_weights(shape); };
    if (auto m = point(klass, what, plan_.gemm_rule, make)) {
      device_.gemm.push_back(
          {shape, timing_of(m->summary), m->best_flops_per_s(), m->impl, m->layout, true});
      progress(what, format_flops_per_s(m->best_flops_per_s()));
      keep_for_revisit(klass, what, make, Revisit::Kind::gemm, device_.gemm.size() - 1, *m);
    } else {
      no_revisit();
    }
  }
}

void DeviceRun::measure_conv() {
  group_ = "conv";
  for (const auto& [shape, layout] : plan_.conv) {
    const auto what = "conv " + shape.str();
    const auto klass = fmt::format("conv {}", to_string(shape.dtype));
    const auto make = [this, shape = shape, layout = layout] { return backend_.conv(shape, layout); };
    if (auto m = point(klass, what, plan_.conv_rule, make)) {
      device_.conv.push_back({shape, m->layout, timing_of(m->summary), m->best_flops_per_s(), m->impl});
      const auto named = what + " " + layout_label(layout, m->layout);
      progress(named, format_flops_per_s(m->best_flops_per_s()));
      const std::size_t i = device_.conv.size() - 1;
      const double flops = m->flops;
      keep_for_revisit(klass, named, make, Revisit::Kind::conv, i, *m);
      watch_.offer(klass, named, flops, make, std::move(m->kernel), m->samples,
                   [this, i, flops](const Summary& s, const std::string& impl, const std::string& ran_layout) {
                     set_figures(device_.conv[i], flops, s, impl, ran_layout);
                   }, m->summary.typical_s);
    } else {
      no_revisit();
    }
  }
  // Cold weights: their own points, never a peak.
  for (const auto& [shape, layout] : plan_.conv_cold) {
    const auto what = "conv " + shape.str() + " cold weights";
    const auto klass = fmt::format("conv {}", to_string(shape.dtype));
    const auto make = [this, shape = shape, layout = layout] {
      return backend_.conv_cold_weights(shape, layout);
    };
    if (auto m = point(klass, what, plan_.conv_rule, make)) {
      device_.conv.push_back(
          {shape, m->layout, timing_of(m->summary), m->best_flops_per_s(), m->impl, true});
      const auto named = what + " " + layout_label(layout, m->layout);
      progress(named, format_flops_per_s(m->best_flops_per_s()));
      keep_for_revisit(klass, named, make, Revisit::Kind::conv, device_.conv.size() - 1, *m);
    } else {
      no_revisit();
    }
  }
}

// The sweep's points in main memory (`main_memory`), or the others and the device copies.
void DeviceRun::measure_memory(bool main_memory) {
  group_ = main_memory ? "memory" : "caches";
  const auto from = device_memory_from(backend_.describe().levels);
  for (const auto& point_at : sweep_points(plan_)) {
    const StreamOp op = point_at.first;
    const std::int64_t bytes = point_at.second;
    if (main_memory != (from && bytes >= *from)) continue;
    const auto what = fmt::format("stream {} {}", to_string(op), format_bytes(double(bytes)));
    const auto make = [this, op, bytes] { return backend_.stream(op, bytes); };
    if (auto m = point(fmt::format("stream {}", to_string(op)), what, plan_.stream_rule, make)) {
      device_.memory_sweep.push_back({std::string(to_string(op)), bytes, m->best_Bps(), m->median_Bps()});
      progress(what, format_Bps(m->best_Bps()));
      const bool in_main_memory = from && bytes >= *from;
      // Main memory's other ops: timed again with its fast spells.
      if (op != StreamOp::triad && in_main_memory && holds_companion(static_cast<double>(bytes))) {
        const std::size_t i = device_.memory_sweep.size() - 1;
        const double moved = m->bytes;
        watch_.accompany(kMemoryCategory, what, moved, std::move(m->kernel), m->samples,
                         [this, i, moved](const Summary& s, const std::string&, const std::string&) {
                           MemoryPoint& p = device_.memory_sweep[i];
                           if (moved / s.min_s > p.Bps) {
                             p.Bps = moved / s.min_s;
                             p.median_Bps = moved / s.median_s;
                             set_memory_levels();
                           }
                         });
      }
      // The main-memory triad is the headline bandwidth: the watch's to burst and confirm where
      // there are bursts; else every size is confirmed below, as the other ops are.
      if (op != StreamOp::triad || !in_main_memory || plan_.watch_share <= 0) continue;
      const std::size_t i = device_.memory_sweep.size() - 1;
      const double moved = m->bytes;
      watch_.offer(kMemoryCategory, what, moved, make, std::move(m->kernel), m->samples,
                   [this, i, moved](const Summary& s, const std::string&, const std::string&) {
                     MemoryPoint& p = device_.memory_sweep[i];
                     p.Bps = moved / s.min_s;
                     p.median_Bps = moved / s.median_s;
                     set_memory_levels();
                   });
    }
  }
  if (!main_memory) {
    for (const auto bytes : plan_.device_copy_bytes) {
      const auto what = fmt::format("device copy {}", format_bytes(double(bytes)));
      if (auto m = point("device copy", what, plan_.stream_rule, [&] { return backend_.device_copy(bytes); })) {
        device_.memory_sweep.push_back({"d2d_copy", bytes, m->best_Bps(), m->median_Bps()});
        progress(what, format_Bps(m->best_Bps()));
      }
    }
  }
  set_memory_levels();
}

// Whether the peak watch may keep one more main-memory kernel of `bytes` for the spells: the
// plan has spells and kept kernels, and the companions' working sets stay within an eighth of
// the machine's memory.
bool DeviceRun::holds_companion(double bytes) {
  if (plan_.watch_spell_s <= 0 || !plan_.watch_keeps_kernels || plan_.watch_share <= 0) return false;
  const auto memory = backend_.describe().memory_bytes;
  if (!memory || companion_bytes_ + bytes > static_cast<double>(*memory) / 8) return false;
  companion_bytes_ += bytes;
  return true;
}

void DeviceRun::set_memory_levels() {
  device_.memory_levels = level_bandwidths(backend_.describe().levels, device_.memory_sweep, "triad");
  // What in-place ops (an activation over the tensor it reads) get, level by level.
  device_.memory_in_place_levels =
      level_bandwidths(backend_.describe().levels, device_.memory_sweep, std::string(to_string(StreamOp::update)));
  const auto& levels = backend_.describe().levels;
  if (!device_.memory_levels.empty() && !levels.empty() && device_.memory_levels.back().name == levels.back().name) {
    device_.peaks.memory_Bps = device_.memory_levels.back().Bps;
  }
}

void DeviceRun::measure_transfers() {
  group_ = "transfer";
  for (const auto dir : {TransferDir::h2d, TransferDir::d2h}) {
    for (const bool pinned : {true, false}) {
      const auto key = fmt::format("{}_{}", to_string(dir), pinned ? "pinned" : "pageable");
      TransferFit fit;
      for (const auto bytes : plan_.transfer_bytes) {
        const auto what = fmt::format("transfer {} {}", key, format_bytes(double(bytes)));
        if (auto m = point("transfer " + key, what, plan_.transfer_rule,
                           [&] { return backend_.transfer(dir, pinned, bytes); })) {
          fit.points.push_back({bytes, m->summary.min_s});
          progress(what, format_Bps(m->best_Bps()));
        }
      }
      if (fit.points.empty()) continue;
      if (const auto lb = fit_latency_bandwidth(fit.points)) {
        fit.latency_s = lb->latency_s;
        fit.Bps = lb->Bps;
      }
      device_.transfers[key] = std::move(fit);
    }
  }
  if (plan_.bidirectional_bytes > 0) {
    const auto what = fmt::format("transfer bidirectional {}", format_bytes(double(plan_.bidirectional_bytes)));
    if (auto m = point("transfer bidirectional", what, plan_.transfer_rule,
                       [&] { return backend_.transfer_bidirectional(plan_.bidirectional_bytes); })) {
      device_.bidirectional_Bps = m->best_Bps();
      progress(what, format_Bps(m->best_Bps()));
    }
  }
}

}  // namespace truepeak::driver_detail
