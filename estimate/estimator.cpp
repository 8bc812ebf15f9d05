// The estimator's entry points: an estimate of one model on one device (inference or a training
// step), its memory, the largest batch that fits, and batch sweeps.
#include "estimate/estimator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "estimate/estimator_detail.hpp"
#include "estimate/fusion.hpp"
#include "estimate/memory.hpp"
#include "estimate/rates.hpp"

namespace truepeak::estimate {

using namespace estimator_detail;

namespace {

// Bytes moved per parameter by one optimizer step (read gradient, read and write the weights and
// each state; under mixed precision the fp32 master is updated and the low-precision copy written).
struct OptimizerTraffic {
  double bytes_per_param;
  double flops_per_param;
};
OptimizerTraffic optimizer_traffic(Optimizer opt, double e) {
  const bool mixed = e < 4;
  const double master = mixed ? 4 : e;
  const double state = std::max(e, 4.0);
  const int states = opt == Optimizer::sgd ? 0 : (opt == Optimizer::momentum ? 1 : 2);
  double bytes = e /*grad*/ + 2 * master + 2 * states * state + (mixed ? e : 0);
  const double flops = opt == Optimizer::sgd
                           ? 2
                           : (opt == Optimizer::momentum ? 4 : (opt == Optimizer::adamw ? 14 : 12));
  return {bytes, flops};
}

// The estimate's totals: a latency and a throughput that are finite and positive, memory
// figures that are finite and not negative. A model whose ops all move and compute nothing (all
// their tensors empty) has no time: the input's fault.
void check_result(const Estimate& est) {
  const auto all_totals = {std::optional<Totals>(est.forward), est.decode, est.backward,
                           est.optimizer_step};
  const bool no_work = std::all_of(all_totals.begin(), all_totals.end(), [](const auto& t) {
    return !t || (t->flops == 0 && t->bytes == 0);
  });
  if (no_work && !(est.latency_s > 0))
    throw InputError(fmt::format("model '{}': no op computes or moves any data", est.model));
  const auto bad = [&](const char* what, double value) {
    throw Error(fmt::format("internal error: model '{}' on {}: {} came out as {}", est.model,
                            est.device_id, what, value));
  };
  for (const auto& [what, value] :
       {std::pair{"the latency", est.latency_s}, std::pair{"the throughput", est.throughput_per_s},
        std::pair{"the decode time", est.decode ? est.decode->time_s : 1.0}})
    if (!std::isfinite(value) || !(value > 0)) bad(what, value);
  const auto& m = est.memory;
  for (const auto& [what, value] :
       {std::pair{"the naive latency", est.naive_latency_s},
        std::pair{"the weights' memory", m.weights_bytes},
        std::pair{"the activations' memory", m.activations_bytes},
        std::pair{"the KV cache's memory", m.kv_cache_bytes},
        std::pair{"the memory in all", m.total_bytes}, std::pair{"the parameters", est.params}})
    if (!std::isfinite(value) || value < 0) bad(what, value);
}

Estimate estimate_with(const Model& model, const Device& device, const RateModel& rates,
                       const Options& options) {
  if (options.batch < 1)
    throw InputError(fmt::format("batch {} must be at least 1", options.batch));
  Estimate est;
  est.model = model.name;
  est.device_id = device.id;
  est.dtype = options.dtype;
  est.mode = options.mode;
  est.optimizer = options.optimizer;
  est.batch = options.batch;
  const Bindings b = bindings_for(model, options);
  // Every size the cost and memory models take below fits 64 bits, or the op is named here.
  try {
    check_sizes(model.forward, b);
    if (model.decode) check_sizes(*model.decode, b);
  } catch (const OverflowError& e) {
    throw OverflowError(fmt::format("{}: {}", model.source.empty() ? model.name : model.source, e.what()));
  }
  for (const auto& [name, value] : b) {
    if (name == "S" && std::any_of(model.defaults.begin(), model.defaults.end(),
                                   [](const auto& d) { return d.first == "S"; }))
      est.seq = value;
    if (name == "T" && model.decode) est.context = value;
  }
  const double e = dtype_bytes(options.dtype);
  std::vector<OpRow>* rows = options.per_op_rows ? &est.ops : nullptr;
  const double n = static_cast<double>(options.batch);
  est.params = count_params(model.forward, b);

  if (options.mode == Mode::inference) {
    // A runtime's fusions (its activations' peak live set still counts the tensors inside its
    // kernels: an upper bound).
    std::optional<FusedGraph> forward_kernels, decode_kernels;
    const double graph_s = options.fusion ? options.fusion->graph_s : 0;
    if (options.fusion) {
      forward_kernels = fuse(model.forward, *options.fusion);
      est.fusion = FusionApplied{forward_kernels->counts(), std::nullopt, graph_s};
      if (model.decode) {
        decode_kernels = fuse(*model.decode, *options.fusion);
        est.fusion->decode = decode_kernels->counts();
      }
    }
    est.forward = run_forward(model.forward, b, e, rates, model.decode ? "prefill" : "forward",
                              rows, options.blocked_layout, options.linears_as_convolutions,
                              options.own_rates, options.in_place_ops, options.kind_overheads,
                              forward_kernels ? &*forward_kernels : nullptr, graph_s,
                              options.cold_calls ? &*options.cold_calls : nullptr);
    est.latency_s = est.forward.time_s;
    est.naive_latency_s = est.forward.naive_s;
    if (model.decode) {
      est.decode = run_forward(*model.decode, b, e, rates, "decode", rows, options.blocked_layout,
                               options.linears_as_convolutions, options.own_rates,
                               options.in_place_ops, options.kind_overheads,
                               decode_kernels ? &*decode_kernels : nullptr, graph_s,
                               options.cold_calls ? &*options.cold_calls : nullptr);
      est.throughput_per_s = n / est.decode->time_s;
      est.throughput_unit = "tokens/s";
    } else {
      est.throughput_per_s = n / est.latency_s;
      est.throughput_unit = "samples/s";
    }
  } else {
    est.forward = run_forward(model.forward, b, e, rates, "forward", rows);
    est.backward = run_backward(model.forward, b, e, rates, rows);
    // One fused multi-tensor update over all parameters (PyTorch's foreach/fused optimizers).
    const auto traffic = optimizer_traffic(options.optimizer, e);
    Work w;
    w.phase = "optimizer";
    w.engine = Engine::vector;
    w.flops = traffic.flops_per_param * est.params;
    w.bytes = traffic.bytes_per_param * est.params;
    w.shape = fmt::format("{} params", est.params);
    Op op;
    op.name = std::string(to_string(options.optimizer));
    op.kind = OpKind::elementwise;
    op.fn = "update";
    Totals opt;
    add_row(opt, rows, cost_row(op, w, rates, "optimizer", 0));
    est.optimizer_step = opt;
    est.latency_s = est.forward.time_s + est.backward->time_s + opt.time_s;
    est.naive_latency_s = est.forward.naive_s + est.backward->naive_s + opt.naive_s;
    est.throughput_per_s = n / est.latency_s;
    est.throughput_unit = "samples/s";
  }
  std::optional<double> device_bytes;
  if (device.memory_bytes)
    device_bytes = static_cast<double>(*device.memory_bytes);
  else if (options.memory_bytes)
    device_bytes = static_cast<double>(*options.memory_bytes);
  est.memory = estimate_memory(model, options, device_bytes);
  check_result(est);
  return est;
}

}  // namespace

std::string_view to_string(Mode mode) { return mode == Mode::inference ? "inference" : "training"; }

std::string_view to_string(Optimizer o) {
  switch (o) {
    case Optimizer::sgd:
      return "sgd";
    case Optimizer::momentum:
      return "momentum";
    case Optimizer::adam:
      return "adam";
    case Optimizer::adamw:
      return "adamw";
  }
  return "adam";
}

std::optional<Mode> parse_mode(std::string_view text) {
  if (text == "inference") return Mode::inference;
  if (text == "training") return Mode::training;
  return std::nullopt;
}

std::optional<Optimizer> parse_optimizer(std::string_view text) {
  for (auto o : {Optimizer::sgd, Optimizer::momentum, Optimizer::adam, Optimizer::adamw})
    if (to_string(o) == text) return o;
  return std::nullopt;
}

MemoryBreakdown estimate_memory(const Model& model, const Options& options,
                                std::optional<double> device_bytes) {
  const Bindings b = bindings_for(model, options);
  const double e = dtype_bytes(options.dtype);
  const double params = count_params(model.forward, b);
  MemoryBreakdown m;
  m.weights_bytes = params * e;
  if (options.mode == Mode::inference) {
    m.activations_bytes = peak_live_bytes(model.forward, b, e);
    if (model.decode) {
      m.activations_bytes = std::max(m.activations_bytes, peak_live_bytes(*model.decode, b, e));
      m.kv_cache_bytes = state_bytes(*model.decode, b, e);
    }
  } else {
    m.activations_bytes = training_activation_bytes(model.forward, b, e);
    m.gradients_bytes = params * e;
    if (e < 4) m.master_weights_bytes = params * 4;
    const double state = std::max(e, 4.0);
    const int states = options.optimizer == Optimizer::sgd
                           ? 0
                           : (options.optimizer == Optimizer::momentum ? 1 : 2);
    m.optimizer_bytes = params * state * states;
  }
  m.total_bytes = m.weights_bytes + m.master_weights_bytes + m.gradients_bytes + m.optimizer_bytes +
                  m.activations_bytes + m.kv_cache_bytes;
  m.device_bytes = device_bytes;
  if (device_bytes) {
    m.usable_bytes = *device_bytes * (1 - options.headroom);
    m.fits = m.total_bytes <= m.usable_bytes;
  }
  return m;
}

std::optional<std::int64_t> max_batch(const Model& model, const Options& options,
                                      std::optional<double> device_bytes) {
  if (!device_bytes) return std::nullopt;
  Options o = options;
  auto fits = [&](std::int64_t n) {
    o.batch = n;
    try {
      return estimate_memory(model, o, device_bytes).fits;
    } catch (const OverflowError&) {
      return false;  // a batch whose sizes overflow 64 bits fits no memory
    }
  };
  if (!fits(1)) return 0;
  std::int64_t lo = 1, hi = 2;
  while (hi < (std::int64_t{1} << 40) && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {  // fits(lo), !fits(hi)
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

bool BlockedLayout::runs_blocked(const std::string& kind) const {
  const auto base = kind.substr(0, kind.find(':'));
  return std::any_of(ops.begin(), ops.end(),
                     [&](const std::string& k) { return k == kind || k == base; });
}

bool BlockedLayout::conv_runs_blocked(std::int64_t in_channels, std::int64_t out_channels,
                                      std::int64_t groups) const {
  if (conv_channel_multiple <= 1 || in_channels <= 0) return true;
  const bool depthwise = groups > 1 && groups == in_channels && out_channels == groups;
  if (groups > 1 && !depthwise) return true;  // a grouped one: group_reorder_widths
  if (!depthwise && in_channels <= conv_small_input_channels) return true;
  return in_channels % conv_channel_multiple == 0;
}

std::optional<double> own_rate(const OwnRates& rates, const std::string& kind) {
  const auto base = kind.substr(0, kind.find(':'));
  std::optional<double> whole;
  for (const auto& [k, rate] : rates) {
    if (k == kind) return rate;
    if (k == base) whole = rate;
  }
  return whole;
}

Estimate estimate(const Model& model, const Device& device, const Options& options) {
  const RateModel rates(device, options.dtype, options.conv_layout, options.op_overhead_s,
                        options.typical_times, options.conv_dispatch);
  return estimate_with(model, device, rates, options);
}

Sweep sweep_batch(const Model& model, const Device& device, const Options& options,
                  const std::vector<std::int64_t>& batches, std::optional<double> max_latency_s) {
  const RateModel rates(device, options.dtype, options.conv_layout, options.op_overhead_s,
                        options.typical_times, options.conv_dispatch);
  Sweep sweep;
  sweep.max_latency_s = max_latency_s;
  Options o = options;
  o.per_op_rows = false;
  std::optional<double> device_bytes;
  if (device.memory_bytes)
    device_bytes = static_cast<double>(*device.memory_bytes);
  else if (options.memory_bytes)
    device_bytes = static_cast<double>(*options.memory_bytes);
  sweep.max_batch = max_batch(model, options, device_bytes);
  for (const auto n : batches) {
    o.batch = n;
    sweep.rows.push_back(estimate_with(model, device, rates, o));
  }
  sweep.best = best_of(sweep.rows, max_latency_s);
  return sweep;
}

std::optional<std::size_t> best_of(const std::vector<Estimate>& rows,
                                   std::optional<double> max_latency_s) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    // Decoders are limited by the time per output token; the rest by the whole pass/step.
    const double latency = r.decode ? r.decode->time_s : r.latency_s;
    const bool ok = r.memory.fits && (!max_latency_s || latency <= *max_latency_s);
    if (ok && (!best || r.throughput_per_s > rows[*best].throughput_per_s)) best = i;
  }
  return best;
}

std::optional<double> device_memory_bytes(const Profile& profile, const Device& device) {
  if (device.memory_bytes) return static_cast<double>(*device.memory_bytes);
  if (device.kind == "cpu" && profile.machine.memory_bytes)
    return static_cast<double>(*profile.machine.memory_bytes);
  return std::nullopt;
}

}  // namespace truepeak::estimate
