// A runtime's fusion rules over a graph (Options::fusion): which ops run as one generated kernel
// (torch.compile's inductor), and the work of such a kernel for the cost model.
#pragma once

#include <cstddef>
#include <vector>

#include "estimate/cost.hpp"
#include "estimate/estimator.hpp"
#include "estimate/graph.hpp"

namespace truepeak::estimate {

// One kernel of the runtime: its ops in execution order and its anchor, the op whose kind the
// kernel has (a product, a norm or softmax, else the first elementwise op).
struct FusedKernel {
  std::vector<std::size_t> ops;
  std::size_t anchor = 0;
};

struct FusedGraph {
  std::vector<std::size_t> kernel_of;  // for each op of the graph, its kernel
  std::vector<FusedKernel> kernels;
  // The kernels that run more than one op, and those ops.
  FusionCounts counts() const;
};

// The kernels of `graph` under `rules`, walking its ops in execution order. An elementwise op E
// joins the kernel whose last op wrote one of its activations X when X has no other reader (a
// view reads nothing: its readers count toward the tensor it views), X is not the graph's output
// (the last op's), and the rule for the kernel's anchor allows it: `pointwise` after an
// elementwise anchor, `into_reductions` after a norm or softmax, `into_products` after a linear,
// matmul or conv2d. With `into_reductions`, a norm or softmax whose first activation is the
// output of an elementwise kernel, read by it alone, takes that kernel in and becomes its anchor.
// So a kernel holds at most one product or reduction, and each of its ops but the last writes a
// tensor that only the kernel's next op reads. Every other op is a kernel of its own.
FusedGraph fuse(const Graph& graph, const FusionRules& rules);

// The work of kernel `k` of `fused` as one op, from its ops' works (`works[i]`: the single work
// of `k.ops[i]`, as forward_work and the estimator's options made it) and `kernel_s`, the longest
// compute time of its ops as each is costed alone (Work::kernel_s). The anchor's engine, shape
// and dispatch; the FLOPs of all; the bytes it moves from outside (activations that no op of the
// kernel wrote, each once, and parameters, each once) and its output once: the tensors between
// its ops stay in registers and caches.
Work fused_work(const Graph& graph, const FusedKernel& k, const std::vector<Work>& works,
                double kernel_s, const Bindings& bindings, double element_bytes);

}  // namespace truepeak::estimate
