// The estimator's public API: load a model (zoo name or JSON file), predict its latency,
// throughput and memory on one device of a calibrated profile, and sweep batch sizes.
// Every prediction comes with the naive roofline figure beside it (same FLOPs and bytes over the
// datasheet peaks). See docs/estimator.md for the cost and memory models.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/profile.hpp"
#include "estimate/graph.hpp"

namespace truepeak::estimate {

// ---- models -------------------------------------------------------------------------------

// A zoo name ("resnet50", case-insensitive) or a path to a model JSON file (graph or transformer
// shorthand). Throws InputError naming the file, op and field when something is wrong.
Model load_model(const std::string& name_or_path);
// Parses a model document; `where` names it in error messages. Throws InputError.
Model model_from_json_text(const std::string& text, const std::string& where);

struct ZooEntry {
  std::string name;
  std::string kind;
  std::string description;
  double params = 0;                // counted from the graph
  double forward_flops = 0;         // one sample (N = 1) at the default sequence length
  std::optional<std::int64_t> seq;  // the default sequence length, where the model has one
};
std::vector<ZooEntry> list_zoo();
std::vector<std::string> zoo_names();

// ---- estimates ----------------------------------------------------------------------------

// A runtime that keeps 4-D activations in oneDNN's channel-blocked layout between the ops it runs
// in oneDNN and in the plain layout elsewhere (PyTorch's frozen oneDNN graphs): every convolution
// runs blocked; an op whose kind is in `ops` runs blocked when all its 4-D inputs are; every other
// op runs plain. Where an op meets a 4-D activation in the other layout, the runtime changes its
// layout first (once per tensor and layout), at the profile's measured reorder rates.
struct BlockedLayout {
  // Row kinds ("elementwise:relu", "pool:max", or a whole kind: "pool").
  std::vector<std::string> ops;
  // Copies one layout change makes: the reorder itself, plus any copy the runtime adds (PyTorch
  // copies a plain tensor into its own before oneDNN reorders it: 2 to blocked, 1 to plain).
  int to_plain_copies = 1;
  int to_blocked_copies = 1;
  // A blocked op with a broadcast 4-D operand (a squeeze-excitation scale [N, C, 1, 1] times an
  // activation) expands that operand: it goes to plain, is expanded to the output's shape, and
  // that tensor is changed to blocked (PyTorch's oneDNN multiply). Else the op broadcasts in place.
  bool expand_broadcast = false;
  // An elementwise op with a broadcast 4-D operand runs plain whatever its kind: its blocked
  // operands change to plain, each at its own size, and its output stays plain (onnxruntime's
  // squeeze-excitation multiply runs outside its NCHWc region).
  bool broadcast_plain = false;
  // Channels per group of the grouped convolutions (not depthwise) that run in a layout of their
  // own: their input is reordered out of the blocked layout and their output back, one reorder
  // each, every time (oneDNN on AVX-512: groups of 4 and 8 channels in aBcd4b / aBcd8b, of 2 in
  // plain NCHW; groups of 16 and depthwise convolutions run blocked).
  std::vector<std::int64_t> group_reorder_widths;
  // A dense convolution of more than `conv_small_input_channels` input channels, or a depthwise
  // one, runs blocked only where its channels are a multiple of `conv_channel_multiple`; the
  // others run plain, between layout changes (onnxruntime on AVX2: 58 channels plain, 60 and 56
  // blocked, an image's 3 blocked).
  std::int64_t conv_channel_multiple = 1;
  std::int64_t conv_small_input_channels = 0;
  bool runs_blocked(const std::string& kind) const;
  bool conv_runs_blocked(std::int64_t in_channels, std::int64_t out_channels, std::int64_t groups) const;
};

// Elements per second of a runtime's own kernels, by op kind (a row kind such as
// "elementwise:gelu_tanh", or a whole kind: "pool"). Elements: an op's outputs, a pool's window
// elements (outputs x window).
using OwnRates = std::vector<std::pair<std::string, double>>;

// A runtime's fixed costs of a call whose state the caches no longer hold: what every op pays in
// a model whose pass (its weights and the activations it writes) outgrows the caches, since each
// layer's call then finds its module, parameters and the library's state for it gone since the
// pass before.
struct ColdCalls {
  std::optional<double> op_s;  // an op of a kind `kinds` lacks
  OwnRates kinds;              // row kind -> seconds
};
// The own-rate kind of a runtime's bias copy into a linear's output before the product
// accumulates into it (output elements per second).
inline constexpr const char* kBiasFillKind = "linear:bias";
// The own-rate kind of a runtime's addition of a convolution's bias to its output after the
// product, in a kernel of its own (output elements per second).
inline constexpr const char* kConvBiasKind = "conv2d:bias";
// The rate for `kind`: the row kind's, else the whole kind's.
std::optional<double> own_rate(const OwnRates& rates, const std::string& kind);

// Which op chains the target runtime runs as one generated kernel (torch.compile's inductor), and
// the fixed cost of one call of its compiled graph. How chains form and what one costs:
// estimate/fusion.hpp.
struct FusionRules {
  bool pointwise = false;        // consecutive elementwise ops
  bool into_reductions = false;  // elementwise ops after a norm or softmax, and its prologue
  bool into_products = false;    // elementwise ops after a linear, matmul or conv2d (its epilogue)
  double graph_s = 0;            // one call of the compiled graph, once a pass (and a decode step)
};

enum class Mode { inference, training };
enum class Optimizer { sgd, momentum, adam, adamw };
std::string_view to_string(Mode mode);
std::string_view to_string(Optimizer optimizer);
std::optional<Mode> parse_mode(std::string_view text);
std::optional<Optimizer> parse_optimizer(std::string_view text);

struct Options {
  DType dtype = DType::f32;
  Mode mode = Mode::inference;
  Optimizer optimizer = Optimizer::adam;
  std::int64_t batch = 1;
  std::optional<std::int64_t> seq;      // S; default from the model
  std::optional<std::int64_t> context;  // T for the decode step; default S
  // Device memory to fit against when the device has no memory_bytes of its own (a CPU: the
  // machine's memory). The estimate keeps `headroom` of it free.
  std::optional<std::int64_t> memory_bytes;
  double headroom = 0.2;
  bool per_op_rows = true;  // false: totals only (sweeps)
  // Convolution points of this layout only ("nchw", "nhwc", "blocked"); empty: the fastest
  // layout measured at each shape.
  std::string conv_layout;
  // Each measured point at its typical time (the median of its quietest look, where the profile
  // records it) rather than its fastest sample, the undisturbed figure.
  bool typical_times = false;
  // Fixed cost of one op in the target runtime (framework dispatch included), in place of the
  // profile's measured library-level per-op overhead; unset: the profile's.
  std::optional<double> op_overhead_s;
  // How the target runtime lays out 4-D activations (inference only); unset: as each op needs,
  // with no layout changes between ops.
  std::optional<BlockedLayout> blocked_layout;
  // The target runtime runs the ops of these kinds in its own kernels, outside the profile's
  // library, at these rates (inference): every op of the kind, or with a blocked layout the ops
  // that run plain (PyTorch's ATen kernels: its max pool also computes the indices of its maxima;
  // its bf16 tanh GELU runs far below oneDNN's). Their memory traffic still counts.
  OwnRates own_rates;
  // The target runtime runs each linear layer as a 1x1 convolution over [rows, in, 1, 1] (or a
  // library inner product, which oneDNN runs the same way), not as a matmul: its product takes
  // the profile's convolution points (inference).
  bool linears_as_convolutions = false;
  // The target runtime runs the elementwise ops of these kinds (row kinds such as
  // "elementwise:relu", or "elementwise" for all) in place: the output over an input of its size
  // that no other op reads and the graph did not supply (PyTorch's frozen graphs: relu_, add_).
  // Such an op costs RateModel::in_place_memory_s where the profile has in-place levels.
  std::vector<std::string> in_place_ops;
  // Fixed cost of one op of these kinds in the target runtime, seconds, in place of the per-op
  // overhead (row kinds such as "linear", or a whole kind; inference): a framework whose dispatch
  // of a library product costs more than that of its other ops (PyTorch 1.13's eager linears and
  // matmuls through oneDNN: about 20 us a call against 4 us of an add).
  OwnRates kind_overheads;
  // The same costs of a cold call (ColdCalls), in place of those two where the model's pass
  // outgrows the caches (inference; unset: the warm costs hold whatever the model's size).
  std::optional<ColdCalls> cold_calls;
  // The target runtime runs chains of ops as one generated kernel and calls its compiled graph
  // once a pass (inference); unset: every op runs as a kernel of its own.
  std::optional<FusionRules> fusion;
  // The target runtime sends the forward convolutions that meet this rule to an implementation of
  // their own (RateModel's conv_dispatch); unset: one implementation whatever the shape.
  std::optional<RuntimeConvDispatch> conv_dispatch;
};

// One row of the per-op table. A training step has forward, dgrad, wgrad and optimizer rows.
struct OpRow {
  std::string name;
  std::string kind;   // op kind ("linear", "conv2d", ...)
  std::string phase;  // "forward", "prefill", "decode", "dgrad", "wgrad", "backward", "optimizer"
  std::string shape;  // GEMM "m x n x k" (batch b), conv "mb1ic64ih56oc64kh3sh1ph1", else output
  double flops = 0;
  double bytes = 0;
  // GEMM/conv: the kernel time interpolated from measured shapes (efficiency against the
  // reference roofline, rates.hpp); other ops: flops / measured vector peak.
  double compute_s = 0;
  // Activation bytes / bandwidth of the level holding the op's bytes, plus weight bytes /
  // bandwidth of the level holding all of the model's weights.
  double memory_s = 0;
  double overhead_s = 0;
  double time_s = 0;  // max(compute_s, memory_s) + overhead_s
  // The roofline's verdict: flops at the best measured rate take longer than memory_s (for a
  // GEMM/conv, compute_s may exceed memory_s on a memory-bound row: it holds the shortfall).
  bool compute_bound = false;
  double achieved_flops_per_s = 0;  // flops / compute_s
  // compute-bound: (flops / time_s) / best measured rate of the dtype; memory-bound:
  // memory_s / time_s, the share of the time the memory roof accounts for.
  double peak_fraction = 0;
  double naive_s = 0;               // max(flops / datasheet peak, bytes / datasheet bandwidth)
  // The ops a fused kernel runs, in execution order (Options::fusion); empty: the op alone.
  std::vector<std::string> fused;
};

struct Totals {
  double time_s = 0;
  double naive_s = 0;
  double flops = 0;
  double bytes = 0;
  double overhead_s = 0;
};

// What a runtime's fusion rules made of one pass: the kernels that run several ops, and the ops
// they run.
struct FusionCounts {
  int kernels = 0;
  int ops = 0;
};

struct FusionApplied {
  FusionCounts forward;                 // the forward pass (decoders: the prefill)
  std::optional<FusionCounts> decode;   // decoders: one decode step
  double graph_s = 0;                   // the graph call charged once a pass
};

struct MemoryBreakdown {
  double weights_bytes = 0;
  double master_weights_bytes = 0;  // fp32 copy under mixed precision
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;  // inference: peak live set; training: saved for backward
  double kv_cache_bytes = 0;
  double total_bytes = 0;
  std::optional<double> device_bytes;
  double usable_bytes = 0;  // device_bytes x (1 - headroom)
  bool fits = true;         // total <= usable (true when the device size is unknown)
};

struct Estimate {
  std::string model;
  std::string device_id;
  DType dtype = DType::f32;
  Mode mode = Mode::inference;
  Optimizer optimizer = Optimizer::adam;
  std::int64_t batch = 1;
  std::optional<std::int64_t> seq;
  std::optional<std::int64_t> context;

  std::vector<OpRow> ops;  // empty when Options::per_op_rows is false

  // Inference: one forward pass (decoders: the prefill). Training: one full step.
  double latency_s = 0;
  double naive_latency_s = 0;
  double throughput_per_s = 0;  // samples per second (decoders: generated tokens per second)
  std::string throughput_unit;  // "samples/s", "tokens/s"

  Totals forward;                        // inference forward / prefill; training forward
  std::optional<Totals> decode;          // decoders: one generated token (time per output token)
  std::optional<Totals> backward;        // training
  std::optional<Totals> optimizer_step;  // training

  MemoryBreakdown memory;
  double params = 0;
  // Inference with Options::fusion.
  std::optional<FusionApplied> fusion;
};

// Throws InputError when the device has nothing to estimate from (no measured points and no
// peaks for the dtype) or a symbol has no value.
Estimate estimate(const Model& model, const Device& device, const Options& options);

// Memory only (cheap: no cost model).
MemoryBreakdown estimate_memory(const Model& model, const Options& options,
                                std::optional<double> device_bytes);
// Largest batch whose memory fits the usable device memory; nullopt when the device size is
// unknown, 0 when not even batch 1 fits.
std::optional<std::int64_t> max_batch(const Model& model, const Options& options,
                                      std::optional<double> device_bytes);

struct Sweep {
  std::vector<Estimate> rows;  // one per batch size, totals only
  // Index of the highest throughput that fits in memory and within the latency limit.
  std::optional<std::size_t> best;
  std::optional<double> max_latency_s;
  std::optional<std::int64_t> max_batch;
};
Sweep sweep_batch(const Model& model, const Device& device, const Options& options,
                  const std::vector<std::int64_t>& batches, std::optional<double> max_latency_s);

// The row of highest throughput that fits in memory and within the latency limit (decoders: the
// time per output token; others: the pass or step).
std::optional<std::size_t> best_of(const std::vector<Estimate>& rows,
                                   std::optional<double> max_latency_s);

// The device memory to fit against: the device's own, else the machine's (CPU).
std::optional<double> device_memory_bytes(const Profile& profile, const Device& device);

}  // namespace truepeak::estimate
