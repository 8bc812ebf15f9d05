// The work of each op: FLOPs, minimal bytes (each input, parameter and output moved once) and
// the engine that does it, for the forward pass and for the backward pass (data- and
// weight-gradient with their real GEMM/conv shapes). Rates are applied in estimator.cpp.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "estimate/graph.hpp"
#include "estimate/rates.hpp"

namespace truepeak::estimate {

enum class Engine { gemm, conv, vector, none };

// One kernel. Products of a fused kernel (attention) are several GEMM shapes sharing one launch.
struct Work {
  std::string phase;  // "forward", "dgrad", "wgrad", "backward"
  Engine engine = Engine::vector;
  double flops = 0;
  double bytes = 0;
  double weight_bytes = 0;  // the parameters' share of `bytes` (forward passes)
  // The share of `bytes` read from graph inputs first read by this op (forward passes): like the
  // parameters, read once a pass (a decode step's KV cache, an image).
  double input_bytes = 0;
  // The share of `bytes` written to a fresh buffer (forward passes): the output of an op that
  // cannot run in place (0 for elementwise ops, norms and softmax).
  double output_bytes = 0;
  // The share of `bytes` that is the output written over one of the op's inputs, where the
  // runtime runs the op in place (Options::in_place_ops); 0: as memory_s costs it.
  double in_place_bytes = 0;
  std::vector<std::pair<GemmCoords, double>> products;  // (shape, flops) for gemm/conv engines
  std::int64_t groups = 1;
  bool depthwise = false;
  std::int64_t stride = 1;  // a forward convolution's window stride
  // A forward convolution's input and output channels (0 for other work): a channel-blocked
  // layout pads them to whole blocks.
  std::int64_t in_channels = 0, out_channels = 0;
  // A forward convolution's call, for a runtime's choice of implementation by shape.
  ConvCall conv_call;
  // A further kernel of the runtime op before it (a layout change's later copies): no dispatch of
  // its own, only the library's fixed cost per kernel.
  bool within_op = false;
  std::string shape;  // printable problem
  // Elementwise, norm and softmax work whose op the profile may have measured (vector_ops):
  // its name there (empty where no measured op matches), and the elements a vector kernel writes.
  std::string vector_op;
  double elements = 0;
  // The target runtime's own rate for this kernel (output elements per second), in place of the
  // profile's figures (Options::own_rates).
  std::optional<double> own_elements_per_s;
  // A product between two activations (matmul) that the runtime runs in its own kernels: its
  // rate there, FLOPs per second (Options::own_rates).
  std::optional<double> own_flops_per_s;
  // The target runtime's fixed cost of an op of this kind, in place of the per-op overhead
  // (Options::kind_overheads).
  std::optional<double> overhead_s;
  // A kernel that runs several ops (Options::fusion): its compute time, the longest of its ops'
  // as each is costed alone, in place of the engine's figure.
  std::optional<double> kernel_s;
};

// The profile's vector op (VectorOpShape::op) that times `op`, or "" when none matches: relu,
// clip (as relu6), gelu, gelu_tanh, tanh, sigmoid, silu, exp, the add of two tensors of the
// output's shape, softmax and layernorm.
std::string measured_vector_op(const Op& op);

// Work of the vector engine: `flops` and `bytes` in `phase`, `shape` its printable problem.
Work vector_work(const std::string& phase, double flops, double bytes, std::string shape);

// `element_bytes`: bytes of one element of the estimate's dtype.
std::vector<Work> forward_work(const Op& op, const Bindings& bindings, double element_bytes);
// `needs_grad[i]`: whether input i of the op needs a gradient (it depends on a parameter).
std::vector<Work> backward_work(const Op& op, const Bindings& bindings, double element_bytes,
                                const std::vector<bool>& needs_grad);

// FLOPs per element of elementwise, norm and softmax functions (counted operations, not fitted).
double flops_per_element(const Op& op);
// The elementwise functions flops_per_element counts (the others cost one FLOP an element),
// comma separated for messages.
bool is_known_elementwise(const std::string& fn);
std::string known_elementwise_list();

}  // namespace truepeak::estimate
