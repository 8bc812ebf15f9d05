#include "estimate/estimator.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "estimate/cost.hpp"
#include "estimate/fusion.hpp"
#include "estimate/memory.hpp"
#include "estimate/rates.hpp"

namespace truepeak::estimate {
namespace {

std::string row_kind(const Op& op) {
  return std::string(to_string(op.kind)) + (op.fn.empty() ? "" : ":" + op.fn);
}

// `model_weight_bytes`: all of the model's parameters, the level that serves each op's weights;
// `pass_bytes`: those and the graph inputs, the level that serves what a pass reads once.
OpRow cost_row(const Op& op, const Work& w, const RateModel& rates, const std::string& phase,
               double model_weight_bytes, double pass_bytes = 0) {
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
                                         w.in_channels, w.out_channels);
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

void add_row(Totals& totals, std::vector<OpRow>* rows, OpRow row) {
  check_row(row);
  totals.time_s += row.time_s;
  totals.naive_s += row.naive_s;
  totals.flops += row.flops;
  totals.bytes += row.bytes;
  totals.overhead_s += row.overhead_s;
  if (rows) rows->push_back(std::move(row));
}

// The layout changes a blocked-layout runtime makes before `op`, as rows of their own; `blocked_`
// names the 4-D activations written blocked so far, `changed_` the (tensor, layout) copies made.
class LayoutPass {
 public:
  LayoutPass(const BlockedLayout& layout, const Bindings& b, double e)
      : layout_(layout), b_(b), e_(e) {}

  // Adds the reorders `op` needs, then records its output's layout. Returns whether `op` runs
  // blocked. `first_reads`: the graph inputs `op` is the first to read (name -> bytes); a layout
  // change of one reads it in `op`'s stead, and takes it out.
  bool before(const Op& op, const RateModel& rates, const std::string& phase, double weight_bytes,
              Totals& t, std::vector<OpRow>* rows, std::map<std::string, double>& first_reads,
              double pass_bytes) {
    std::vector<const TensorRef*> activations;
    for (const auto& in : op.inputs)
      if (in.shape.size() == 4) activations.push_back(&in);
    bool run_blocked = op.kind == OpKind::conv2d;
    if (!run_blocked && !activations.empty() && layout_.runs_blocked(row_kind(op)))
      run_blocked = std::all_of(activations.begin(), activations.end(),
                                [&](const TensorRef* in) { return is_blocked(in->name); });
    // One layout change of `tensor`: its copies, each a reorder row.
    const auto change = [&](const TensorRef& tensor, bool to_blocked) {
      const int copies = to_blocked ? layout_.to_blocked_copies : layout_.to_plain_copies;
      for (int i = 0; i < copies; ++i) {
        auto [reorder, work] = reorder_work(op, tensor, to_blocked, i, copies);
        if (const auto it = first_reads.find(tensor.name); i == 0 && it != first_reads.end()) {
          work.input_bytes = std::min(it->second, work.bytes);
          first_reads.erase(it);
        }
        add_row(t, rows, cost_row(reorder, work, rates, phase, weight_bytes, pass_bytes));
      }
    };
    const bool group_layout = op.kind == OpKind::conv2d && runs_in_group_layout(op);
    for (const TensorRef* in : activations) {
      // A plain input goes straight to a grouped convolution's own layout (below).
      if (group_layout && !is_blocked(in->name)) continue;
      if (is_blocked(in->name) != run_blocked && changed_.insert({in->name, run_blocked}).second)
        change(*in, run_blocked);
    }
    if (group_layout) {
      // Into the convolution's own layout and back to the blocked one: one reorder each, inside
      // the library.
      for (const auto& [tensor, to_blocked] : {std::pair{&op.inputs.front(), false}, std::pair{&op.output, true}}) {
        auto [reorder, work] = reorder_work(op, *tensor, to_blocked, 0, 1);
        reorder.name += " (group layout)";
        add_row(t, rows, cost_row(reorder, work, rates, phase, weight_bytes));
      }
    }
    if (run_blocked && layout_.expand_broadcast && op.kind == OpKind::elementwise &&
        op.output.shape.size() == 4) {
      // Each broadcast operand: to plain at its own size, then its expansion to blocked at the
      // output's, every time (the expanded tensor is the op's own).
      for (const TensorRef* in : activations) {
        if (in->shape == op.output.shape) continue;
        change(*in, false);
        change({in->name + " expanded", op.output.shape}, true);
      }
    }
    if (run_blocked && op.output.shape.size() == 4)
      blocked_.insert(op.output.name);
    else
      blocked_.erase(op.output.name);
    return run_blocked;
  }

 private:
  bool is_blocked(const std::string& name) const { return blocked_.count(name) > 0; }

  // A grouped convolution (not depthwise) whose groups have one of the layout's widths of
  // channels.
  bool runs_in_group_layout(const Op& op) const {
    if (op.groups <= 1 || op.inputs.empty() || op.inputs.front().shape.size() != 4) return false;
    const std::int64_t channels = eval_shape(op.inputs.front().shape, b_)[1];
    const std::int64_t width = channels / op.groups;
    const auto& widths = layout_.group_reorder_widths;
    return width > 1 && std::find(widths.begin(), widths.end(), width) != widths.end();
  }

  std::pair<Op, Work> reorder_work(const Op& consumer, const TensorRef& in, bool to_blocked, int i,
                                   int copies) const {
    Op op;
    op.kind = OpKind::transpose;
    op.fn = to_blocked ? "reorder_blocked" : "reorder_plain";
    op.name = fmt::format("{}/{} {}{}", consumer.name, in.name, op.fn,
                          copies > 1 ? fmt::format(" {}/{}", i + 1, copies) : "");
    const double elements = static_cast<double>(num_elements(in.shape, b_));
    Work w;
    w.phase = "forward";
    w.engine = Engine::vector;
    w.bytes = 2 * elements * e_;
    w.output_bytes = elements * e_;  // a fresh tensor
    w.vector_op = op.fn;
    w.elements = elements;
    w.within_op = i > 0;  // one runtime op makes all the copies of a change
    w.shape = fmt::format("[{}]", fmt::join(eval_shape(in.shape, b_), ","));
    return {op, w};
  }

  const BlockedLayout& layout_;
  const Bindings& b_;
  double e_;
  std::set<std::string> blocked_;
  std::set<std::pair<std::string, bool>> changed_;
};

// Which of g's ops run in place: elementwise ops of `kinds` (row kinds, or "elementwise") with an
// input of their output's size that no other op reads and that is not a graph input. A view
// (reshape) aliases the tensor it views: its readers count toward that tensor.
std::vector<bool> runs_in_place(const Graph& g, const Bindings& b, const std::vector<std::string>& kinds) {
  std::vector<bool> out(g.ops.size(), false);
  if (kinds.empty()) return out;
  std::map<std::string, std::string> root;  // a view's output -> the tensor it views
  const auto root_of = [&](const std::string& name) {
    const auto it = root.find(name);
    return it == root.end() ? name : it->second;
  };
  std::map<std::string, int> readers;
  for (const auto& op : g.ops) {
    if (op.kind == OpKind::reshape && !op.inputs.empty()) {
      root[op.output.name] = root_of(op.inputs[0].name);
      continue;
    }
    for (const auto& in : op.inputs) ++readers[root_of(in.name)];
  }
  std::set<std::string> graph_inputs;
  for (const auto& in : g.inputs) graph_inputs.insert(in.name);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    if (op.kind != OpKind::elementwise) continue;
    const auto kind = row_kind(op);
    if (std::none_of(kinds.begin(), kinds.end(),
                     [&](const std::string& k) { return k == kind || k == to_string(op.kind); }))
      continue;
    const auto out_elems = num_elements(op.output.shape, b);
    out[i] = std::any_of(op.inputs.begin(), op.inputs.end(), [&](const TensorRef& in) {
      const auto r = root_of(in.name);
      return !graph_inputs.count(r) && readers[r] == 1 && num_elements(in.shape, b) == out_elems;
    });
  }
  return out;
}

Totals run_forward(const Graph& g, const Bindings& b, double e, const RateModel& rates,
                   const std::string& phase, std::vector<OpRow>* rows,
                   const std::optional<BlockedLayout>& layout = std::nullopt,
                   bool linears_as_convolutions = false, const OwnRates& own_rates = {},
                   const std::vector<std::string>& in_place_kinds = {},
                   const OwnRates& kind_overheads = {}, const FusedGraph* kernels = nullptr,
                   double graph_s = 0) {
  Totals t;
  const auto in_place = runs_in_place(g, b, in_place_kinds);
  const double weight_bytes = count_params(g, b) * e;
  // Graph inputs and persistent state, read once a pass like the parameters: a decode step's KV
  // cache (a GPT-2 small step at batch 8 reads 38 MB of it; the past keys and values of an ONNX
  // graph are its inputs, the zoo's decoders' attention reads it as state) comes from where the
  // weights do, not from the caches that hold one op's working set. Token ids count toward that
  // level but are not charged again: an embedding reads only the rows it gathers.
  std::map<std::string, double> inputs;
  double pass_bytes = weight_bytes;
  for (const auto& in : g.inputs) {
    const double bytes = static_cast<double>(num_elements(in.shape, b)) * e;
    inputs[in.name] = bytes;
    pass_bytes += bytes;
  }
  for (const auto& op : g.ops) pass_bytes += sum_elems(op.state, b) * e;
  // A compiled graph's call (guards, wrapper) runs once before its kernels.
  if (graph_s > 0) {
    OpRow call;
    call.name = "compiled graph call";
    call.kind = "graph";
    call.phase = phase;
    call.overhead_s = graph_s;
    call.time_s = graph_s;
    add_row(t, rows, std::move(call));
  }
  // Each fused kernel's works so far and the longest compute time among them, until its last op.
  std::map<std::size_t, std::pair<std::vector<Work>, double>> pending;
  std::optional<LayoutPass> pass;
  if (layout) pass.emplace(*layout, b, e);
  for (std::size_t index = 0; index < g.ops.size(); ++index) {
    const Op& op = g.ops[index];
    // The graph inputs this op reads first (token ids, read by embeddings, aside).
    std::map<std::string, double> first_reads;
    if (op.kind != OpKind::embedding) {
      for (const auto& in : op.inputs) {
        const auto it = inputs.find(in.name);
        if (it == inputs.end()) continue;
        first_reads.insert(*it);
        inputs.erase(it);
      }
    }
    const bool blocked = pass && pass->before(op, rates, phase, weight_bytes, t, rows, first_reads, pass_bytes);
    // An op outside the profile's library (with a layout: one that runs plain) runs in the
    // runtime's own kernel, at its own rate where one is given.
    const auto own = blocked ? std::nullopt : own_rate(own_rates, row_kind(op));
    const auto dispatch = own_rate(kind_overheads, row_kind(op));
    auto works = forward_work(op, b, e);
    // A view moves nothing, but a runtime that runs each op as it comes (eager) still dispatches
    // it: where a cost is given for views, it is their row's.
    if (works.empty() && op.kind == OpKind::reshape && dispatch) {
      Work w = vector_work("forward", 0, 0, "view");
      w.engine = Engine::none;
      works.push_back(w);
    }
    double first_read = sum_elems(op.state, b) * e;
    for (const auto& [name, bytes] : first_reads) first_read += bytes;
    // A view moves nothing: its output is the input, for the op that reads it next.
    const bool moves = std::any_of(works.begin(), works.end(), [](const Work& w) { return w.bytes > 0; });
    if (!moves && first_read > 0) {
      inputs[op.output.name] = first_read;
      first_read = 0;
    }
    for (auto w : works) {
      w.input_bytes = std::min(first_read, std::max(0.0, w.bytes - w.weight_bytes));
      first_read = 0;  // the first of the op's works reads them
      if (own && w.engine == Engine::vector && w.elements > 0) w.own_elements_per_s = *own;
      if (dispatch && !w.within_op) w.overhead_s = *dispatch;
      if (op.kind == OpKind::matmul && w.engine == Engine::gemm && w.flops > 0) w.own_flops_per_s = own;
      if (in_place[index] && w.engine == Engine::vector && w.input_bytes == 0)
        w.in_place_bytes = std::min(w.bytes, static_cast<double>(num_elements(op.output.shape, b)) * e);
      // A residual add of blocked tensors whose channels leave the last block part-filled runs in
      // oneDNN's reference sum (MobileNets' and EfficientNets' adds of 24 and 40 channels in
      // blocks of 16).
      if (blocked && w.vector_op == "add" && op.output.shape.size() == 4 && rates.blocked_channels() > 0 &&
          eval_shape(op.output.shape, b)[1] % rates.blocked_channels() != 0)
        w.vector_op = "add_padded";
      // The same product in implicit-GEMM coordinates: rows x out x in, a dense 1x1 window, over
      // its in and out features as channels (padded to whole blocks in a blocked layout, as the
      // 1000 classes of a classifier run as 1008).
      if (linears_as_convolutions && op.kind == OpKind::linear && w.engine == Engine::gemm &&
          w.products.size() == 1) {
        w.engine = Engine::conv;
        w.in_channels = static_cast<std::int64_t>(w.products[0].first.k);
        w.out_channels = static_cast<std::int64_t>(w.products[0].first.n);
      }
      OpRow row = cost_row(op, w, rates, phase, weight_bytes, pass_bytes);
      const std::size_t k = kernels ? kernels->kernel_of[index] : 0;
      if (!kernels || kernels->kernels[k].ops.size() < 2) {
        add_row(t, rows, std::move(row));
        continue;
      }
      // An op of a fused kernel: the kernel is costed as one op once its last op is reached.
      auto& [works_so_far, kernel_s] = pending[k];
      works_so_far.push_back(w);
      kernel_s = std::max(kernel_s, row.compute_s);
      const FusedKernel& kernel = kernels->kernels[k];
      if (index != kernel.ops.back()) continue;
      OpRow fused = cost_row(g.ops[kernel.anchor], fused_work(g, kernel, works_so_far, kernel_s, b, e),
                             rates, phase, weight_bytes, pass_bytes);
      for (const auto i : kernel.ops) fused.fused.push_back(g.ops[i].name);
      fused.name = fmt::format("{}", fmt::join(fused.fused, "+"));
      add_row(t, rows, std::move(fused));
      pending.erase(k);
    }
    // A runtime that first copies a linear's bias into its output and then lets the product add
    // to it (PyTorch's eager addmm) runs that copy as a kernel of its own, at the rate given as
    // linear:bias; a bias fused into the product's epilogue costs nothing apart.
    // One that adds a convolution's bias to its output after the product (PyTorch's eager path
    // through cuDNN), reading and writing the output once more, does so at the rate given as
    // conv2d:bias.
    const auto bias = [](const TensorRef& w) { return w.shape.size() == 1; };
    const bool conv = op.kind == OpKind::conv2d;
    const auto fill = op.kind == OpKind::linear && !linears_as_convolutions ? own_rate(own_rates, kBiasFillKind)
                      : conv                                                 ? own_rate(own_rates, kConvBiasKind)
                                                                             : std::nullopt;
    if (fill && std::any_of(op.weights.begin(), op.weights.end(), bias)) {
      const double out = static_cast<double>(num_elements(op.output.shape, b));
      Work w = vector_work("forward", 0, (conv ? 2 : 1) * out * e,
                           fmt::format("bias {} {:.0f} outputs", conv ? "added to" : "into", out));
      w.elements = out;
      w.own_elements_per_s = *fill;
      w.within_op = !conv;
      // The convolution's call issues the addition: its issue time is the convolution's (the
      // runtime's per-op cost, measured on convolutions with a bias, holds it).
      if (conv) w.overhead_s = 0.0;
      OpRow row = cost_row(op, w, rates, phase, weight_bytes, pass_bytes);
      row.kind = conv ? kConvBiasKind : kBiasFillKind;
      add_row(t, rows, row);
    }
  }
  return t;
}

Totals run_backward(const Graph& g, const Bindings& b, double e, const RateModel& rates,
                    std::vector<OpRow>* rows) {
  Totals t;
  const auto need = tensors_needing_grad(g);
  for (auto it = g.ops.rbegin(); it != g.ops.rend(); ++it) {
    std::vector<bool> needs;
    for (const auto& in : it->inputs) needs.push_back(need.count(in.name) > 0);
    for (const auto& w : backward_work(*it, b, e, needs))
      add_row(t, rows, cost_row(*it, w, rates, w.phase, 0));
  }
  return t;
}

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
                              forward_kernels ? &*forward_kernels : nullptr, graph_s);
    est.latency_s = est.forward.time_s;
    est.naive_latency_s = est.forward.naive_s;
    if (model.decode) {
      est.decode = run_forward(*model.decode, b, e, rates, "decode", rows, options.blocked_layout,
                               options.linears_as_convolutions, options.own_rates,
                               options.in_place_ops, options.kind_overheads,
                               decode_kernels ? &*decode_kernels : nullptr, graph_s);
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
                        options.typical_times);
  return estimate_with(model, device, rates, options);
}

Sweep sweep_batch(const Model& model, const Device& device, const Options& options,
                  const std::vector<std::int64_t>& batches, std::optional<double> max_latency_s) {
  const RateModel rates(device, options.dtype, options.conv_layout, options.op_overhead_s,
                        options.typical_times);
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
