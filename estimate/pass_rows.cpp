// A pass as rows: the forward pass (or decode step) op by op, with a runtime's layout changes,
// in-place ops, own kernels, fused kernels and bias kernels, and the backward pass.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "estimate/estimator_detail.hpp"
#include "estimate/memory.hpp"

namespace truepeak::estimate::estimator_detail {
namespace {

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
    bool run_blocked = op.kind == OpKind::conv2d && conv_runs_blocked(op);
    if (op.kind != OpKind::conv2d && !activations.empty() && layout_.runs_blocked(row_kind(op)))
      run_blocked = std::all_of(activations.begin(), activations.end(),
                                [&](const TensorRef* in) { return is_blocked(in->name); });
    if (run_blocked && layout_.broadcast_plain && op.kind == OpKind::elementwise)
      run_blocked = std::all_of(activations.begin(), activations.end(),
                                [&](const TensorRef* in) { return in->shape == op.output.shape; });
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

  // A convolution whose channels the layout's rule lets run blocked.
  bool conv_runs_blocked(const Op& op) const {
    if (op.inputs.empty() || op.inputs.front().shape.size() != 4 || op.output.shape.size() != 4) return true;
    return layout_.conv_runs_blocked(eval_shape(op.inputs.front().shape, b_)[1],
                                     eval_shape(op.output.shape, b_)[1], op.groups);
  }

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

// Whether a pass of `g` outgrows the caches: its weights, inputs and state (`pass_bytes`) and the
// activations it writes together exceed the largest cache.
bool pass_outgrows_caches(const Graph& g, const Bindings& b, double e, double pass_bytes,
                          const RateModel& rates) {
  double bytes = pass_bytes;
  for (const auto& op : g.ops)
    if (op.kind != OpKind::reshape) bytes += static_cast<double>(num_elements(op.output.shape, b)) * e;
  return bytes > rates.largest_cache_bytes();
}

}  // namespace

Totals run_forward(const Graph& g, const Bindings& b, double e, const RateModel& rates,
                   const std::string& phase, std::vector<OpRow>* rows,
                   const std::optional<BlockedLayout>& layout, bool linears_as_convolutions,
                   const OwnRates& own_rates, const std::vector<std::string>& in_place_kinds,
                   const OwnRates& kind_overheads, const FusedGraph* kernels, double graph_s,
                   const ColdCalls* cold_calls) {
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
  const bool cold = cold_calls && pass_outgrows_caches(g, b, e, pass_bytes, rates);
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
    // Its fixed cost: the kind's, else the runtime's per op (RateModel's); a cold call's where
    // the pass outgrows the caches.
    auto fixed = dispatch;
    if (cold) {
      if (const auto c = own_rate(cold_calls->kinds, row_kind(op)))
        fixed = c;
      else if (!dispatch && cold_calls->op_s)
        fixed = cold_calls->op_s;
    }
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
      if (fixed && !w.within_op) w.overhead_s = *fixed;
      // A convolution the layout's channel rule leaves plain runs in the runtime's plain kernels.
      if (pass && !blocked && op.kind == OpKind::conv2d && w.engine == Engine::conv) w.conv_call.plain = true;
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

}  // namespace truepeak::estimate::estimator_detail
