// One op's row: its work timed against the device's rates (compute, memory, overhead, the naive
// roofline beside them), checked, and added to its pass's totals.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "estimate/estimator_detail.hpp"

namespace truepeak::estimate::estimator_detail {

std::string row_kind(const Op& op) {
  return std::string(to_string(op.kind)) + (op.fn.empty() ? "" : ":" + op.fn);
}

OpRow cost_row(const Op& op, const Work& w, const RateModel& rates, const std::string& phase,
               double model_weight_bytes, double pass_bytes) {
  OpRow r;
  r.name = op.name;
  r.kind = row_kind(op);
  r.phase = phase;
  r.shape = w.shape;
  r.flops = w.flops;
  r.bytes = w.bytes;
  r.memory_s = rates.memory_s(w.bytes, w.weight_bytes, model_weight_bytes, w.output_bytes,
                              w.input_bytes, pass_bytes);
  // Written over its input, an op moves no more lines than into a buffer of its own.
  if (w.in_place_bytes > 0 && rates.has_in_place_levels())
    r.memory_s = std::min(r.memory_s, rates.in_place_memory_s(w.bytes, w.in_place_bytes));
  // The bytes of an op of several products (attention) are shared in proportion to their work.
  double product_flops = 0;
  for (const auto& product : w.products) product_flops += product.second;
  const auto share = [&](double f) { return product_flops > 0 ? w.bytes * f / product_flops : 0.0; };
  // Weights read once a pass come back from memory when the model outgrows the caches.
  const bool cold = w.weight_bytes > 0 && model_weight_bytes > rates.largest_cache_bytes();
  switch (w.kernel_s ? Engine::none : w.engine) {
    case Engine::gemm:
      if (w.own_flops_per_s) {
        r.compute_s = w.flops / *w.own_flops_per_s;
        break;
      }
      for (const auto& [g, f] : w.products) r.compute_s += rates.gemm_time_s(g, f, share(f), cold);
      break;
    case Engine::conv:
      for (const auto& [g, f] : w.products)
        r.compute_s += rates.conv_time_s(g, f, share(f), w.groups, w.depthwise, w.stride, cold,
                                         w.in_channels, w.out_channels, w.conv_call);
      break;
    case Engine::vector:
      // A measured op's element rate where the profile has it (transcendental ops are bound by
      // their arithmetic, far below the FMA peak), else counted FLOPs at the vector peak.
      if (w.own_elements_per_s)
        r.compute_s = w.elements / *w.own_elements_per_s;
      else if (const auto rate = w.vector_op.empty() ? std::nullopt
                                                     : rates.vector_op_elements_per_s(w.vector_op, w.bytes))
        r.compute_s = w.elements / *rate;
      else
        r.compute_s = w.flops / rates.vector_flops_per_s();
      break;
    case Engine::none:
      r.compute_s = w.kernel_s.value_or(0.0);
      break;
  }
  // A measured GEMM or convolution point's time holds its own traffic as measured, the op alone
  // on the machine: every operand from the level that holds them all (its weights from main
  // memory where the point is cold), its output cold only where the output alone outgrows the
  // caches. Inside a model an op can move more slowly than that (an output the caches no longer
  // hold, weights from the level that holds the model's, graph inputs read once a pass), and
  // its kernel then takes that much longer.
  if (((w.engine == Engine::gemm && !w.own_flops_per_s) || w.engine == Engine::conv) && !w.kernel_s) {
    double as_measured = rates.memory_s(w.bytes, w.weight_bytes, w.weight_bytes, w.output_bytes);
    if (cold) {
      const double weights = std::clamp(w.weight_bytes, 0.0, w.bytes);
      as_measured += weights / rates.best_Bps() - weights / rates.Bps(w.bytes);
    }
    r.compute_s += std::max(0.0, r.memory_s - as_measured);
  }
  r.overhead_s =
      w.within_op ? rates.library_overhead_s() : w.overhead_s.value_or(rates.overhead_s());
  // Whether a GEMM or convolution is bound by compute or memory is its roofline's verdict (its
  // kernel time, interpolated from measured shapes, holds both).
  r.compute_bound = w.engine == Engine::gemm || w.engine == Engine::conv
                        ? w.flops / rates.best_flops_per_s() >= r.memory_s
                        : r.compute_s >= r.memory_s;
  const double work_s = std::max(r.compute_s, r.memory_s);
  if (rates.overlaps_issue()) {
    // A GPU runs this op's kernel while the host issues the next one: the op takes the longer of
    // the two, and only what the issue time adds beyond the kernel counts as overhead.
    r.time_s = std::max(work_s, r.overhead_s);
    r.overhead_s = r.time_s - work_s;
  } else {
    r.time_s = work_s + r.overhead_s;  // a CPU does the library's fixed work, then the op's
  }
  // A convolution takes at least its path's fixed cost and its work at the best rate. The points
  // price a call between them; a small call past the smallest points of its path would take
  // their efficiency and, with it, a share of the fixed cost that its few FLOPs do not carry.
  if (w.engine == Engine::conv && !w.within_op && !rates.overlaps_issue())
    if (const auto call_s = rates.conv_call_s(w.conv_call)) {
      const double least = *call_s + w.flops / rates.best_flops_per_s();
      if (r.time_s < least) {
        r.overhead_s += least - r.time_s;
        r.time_s = least;
      }
    }
  r.achieved_flops_per_s = r.compute_s > 0 ? w.flops / r.compute_s : 0;
  if (r.time_s > 0) {
    const double roof =
        w.engine == Engine::vector ? rates.vector_flops_per_s() : rates.best_flops_per_s();
    // Against the ceiling that bounds the op: the best matrix/vector rate, or the bandwidth of
    // the memory levels its bytes come from.
    r.peak_fraction = r.compute_bound ? (w.flops / r.time_s) / roof : r.memory_s / r.time_s;
  }
  const double naive_compute =
      w.flops / (w.engine == Engine::vector ? rates.naive_vector_flops_per_s()
                                            : rates.naive_matrix_flops_per_s());
  r.naive_s = std::max(naive_compute, w.bytes / rates.naive_Bps());
  return r;
}

namespace {

// No figure leaves the estimator non-finite or negative: each row is checked as it is added
// (an op's row names it), the totals when the estimate is done (check_result). The readers check
// their inputs, so a row that fails here is a fault of the estimator or of the profile's figures,
// not of the model: an internal error.
void check_row(const OpRow& row) {
  for (const auto& [what, value] :
       {std::pair{"time", row.time_s}, std::pair{"compute time", row.compute_s},
        std::pair{"memory time", row.memory_s}, std::pair{"overhead", row.overhead_s},
        std::pair{"naive time", row.naive_s}, std::pair{"FLOPs", row.flops},
        std::pair{"bytes", row.bytes}})
    if (!std::isfinite(value) || value < 0)
      throw Error(fmt::format("internal error: op '{}' ({}, {}): {} came out as {}, not a finite "
                              "figure of 0 or more",
                              row.name, row.kind, row.phase, what, value));
}

}  // namespace

void add_row(Totals& totals, std::vector<OpRow>* rows, OpRow row) {
  check_row(row);
  totals.time_s += row.time_s;
  totals.naive_s += row.naive_s;
  totals.flops += row.flops;
  totals.bytes += row.bytes;
  totals.overhead_s += row.overhead_s;
  if (rows) rows->push_back(std::move(row));
}

}  // namespace truepeak::estimate::estimator_detail
