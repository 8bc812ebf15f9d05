// The model as the estimator sees it: a list of ops in execution order, each with the shapes of
// the activations it reads, the parameters it reads and the activation it writes. Dimensions may
// be symbolic (batch "N", sequence "S", decode context "T"), so one graph serves every batch size
// and sequence length; the data type is chosen at estimate time, not stored here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace truepeak::estimate {

// Values of the symbols, e.g. {{"N", 8}, {"S", 512}}.
using Bindings = std::vector<std::pair<std::string, std::int64_t>>;

// One dimension: coefficient x product of symbols, e.g. 12*N*S is {12, {"N", "S"}}.
// A plain number has no symbols. Products are enough for every shape a forward pass needs:
// sums (past + new tokens) are bound as their own symbol ("T").
struct Dim {
  std::int64_t coeff = 1;
  std::vector<std::string> symbols;  // sorted, repeated for powers

  Dim() = default;
  Dim(std::int64_t value) : coeff(value) {}  // NOLINT: a number is a dimension
  static Dim symbol(std::string name, std::int64_t coeff = 1);

  bool is_constant() const { return symbols.empty(); }
  // Throws InputError naming the symbol when it has no binding.
  std::int64_t eval(const Bindings& bindings) const;
  // "N", "12*N*S", "768"
  std::string str() const;
  // Parses "768", "N", "12*N*S", "N*S*4". Throws InputError.
  static Dim parse(const std::string& text);

  friend Dim operator*(const Dim& a, const Dim& b);
  friend bool operator==(const Dim& a, const Dim& b) = default;
};

using Shape = std::vector<Dim>;

std::string shape_str(const Shape& shape);  // "[N,64,56,56]"
std::vector<std::int64_t> eval_shape(const Shape& shape, const Bindings& bindings);
// Product of all dimensions (symbolic).
Dim num_elements(const Shape& shape);
// Throws OverflowError when the count does not fit 64 bits.
std::int64_t num_elements(const Shape& shape, const Bindings& bindings);

// A named tensor. Names tie an op's input to the op that wrote it (liveness for the activation
// memory) and identify shared parameters (tied embeddings are counted once).
struct TensorRef {
  std::string name;
  Shape shape;
};

enum class OpKind {
  linear,       // y[..., out] = x[..., in] W[in, out] (+ bias)
  matmul,       // batched: A[..., m, k] B[..., k, n] (transposes as attributes); both activations
  conv2d,       // NCHW input, weight [out_c, in_c / groups, kh, kw]
  attention,    // fused scaled-dot-product attention: q [B, H, Sq, D], k/v [B, Hkv, Skv, D]
  elementwise,  // fn: relu, gelu, silu, sigmoid, tanh, add, mul, scale, rope, ...
  norm,         // fn: batchnorm (channel axis 1), layernorm, rmsnorm (last axis)
  softmax,      // over the last axis
  pool,         // fn: max, avg, global_max, global_avg; NCHW; kernel/stride/pad
  embedding,    // gather rows of a [vocab, dim] table by integer ids
  reshape,      // a view: no data moves (also flatten, squeeze, split into heads)
  transpose,    // a real copy with permuted layout
  concat,       // a real copy along `axis`
};

std::string_view to_string(OpKind kind);
std::optional<OpKind> parse_op_kind(std::string_view text);

struct Op {
  std::string name;
  OpKind kind = OpKind::elementwise;
  std::string fn;  // sub-kind: "relu", "add", "batchnorm", "max", ... (empty where none)

  std::vector<TensorRef> inputs;   // activations read (embedding: the ids)
  std::vector<TensorRef> weights;  // parameters read: weight, bias, scale, table
  std::vector<TensorRef> state;    // persistent non-parameter tensors read: the KV cache
  TensorRef output;

  // conv2d / pool (square kernels, strides, pads and dilations are written as one number)
  std::int64_t kernel_h = 1, kernel_w = 1;
  std::int64_t stride = 1, pad = 0, dilation = 1, groups = 1;
  // matmul
  bool transpose_a = false, transpose_b = false;
  // attention
  bool causal = false;
  // concat
  int axis = -1;
};

struct Graph {
  std::vector<TensorRef> inputs;  // graph inputs (images, token ids)
  std::vector<Op> ops;            // in execution order
};

// What the transformer shorthand and the zoo say about a model beyond its graph.
struct Model {
  std::string name;
  std::string kind;  // "cnn", "encoder", "decoder", "vision-transformer", "onnx", ...
  std::string description;
  std::string source;           // file it came from ("zoo:resnet50", a path)
  Graph forward;                // one forward pass (decoders: the prefill over S tokens)
  std::optional<Graph> decode;  // decoders: one generated token at context T (reads the KV cache)
  // Default values of the symbols other than N: e.g. {"S", 128}; T defaults to S.
  Bindings defaults;
  // Published reference figures, for `truepeak models` and the tests (optional).
  std::optional<double> reference_params;
  std::optional<double> reference_macs;
  // What the reader accepted but could only guess at (an elementwise function it does not
  // know), one line each, for the user.
  std::vector<std::string> warnings;
};

// Evaluates the element count of every tensor the graph's ops read and write under `bindings`:
// throws OverflowError naming the op and the tensor whose count does not fit 64 bits. After it,
// every num_elements() of the graph under these bindings is safe.
void check_sizes(const Graph& graph, const Bindings& bindings);

// Parameters counted once per distinct weight name. Throws InputError on unbound symbols.
double count_params(const Graph& graph, const Bindings& bindings);
// Elements of all of `tensors`.
double sum_elems(const std::vector<TensorRef>& tensors, const Bindings& bindings);
// A max pool, window or global: its gradient needs the input (where each maximum was).
bool is_max_pool(const Op& op);

}  // namespace truepeak::estimate
