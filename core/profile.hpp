// The calibrated hardware profile (schema 1.x): the data model, JSON conversion, and the reader
// and writer. See schema/profile.schema.json and docs/profile-format.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/shapes.hpp"

namespace truepeak {

inline constexpr int kSchemaMajor = 1;
inline constexpr int kSchemaMinor = 19;  // 1.1: gemm points record their layout; 1.2: cold weights;
                                        // 1.3: cold weights on conv points; 1.4: vector_ops;
                                        // 1.5: the gelu_tanh vector op; 1.6: the add vector op;
                                        // 1.7: the reorder_blocked and reorder_plain vector ops;
                                        // 1.8: typical_s on gemm, conv and vector-op points;
                                        // 1.9: the add_padded vector op;
                                        // 1.10: memory.in_place_levels (the update kernel);
                                        // 1.11: cold weights span 8x the largest cache, at most 1 GiB (2x before);
                                        // 1.12: runtimes (calibrate --runtime, docs/runtimes.md);
                                        // 1.13: a runtime record's fusion rules
                                        // 1.14: a runtime record's convolution dispatch rule
                                        // 1.15: a runtime record's conv_batchnorm_apart
                                        // 1.16: a dispatch rule's per-call costs of its two paths
                                        // 1.17: a runtime record's fused_activations
                                        // 1.18: a runtime's cold_op_s, per op and per kind
                                        // 1.19: a runtime layout's channel rule for convolutions
std::string schema_version_string();  // "1.19"

// Timing statistics of one measured point. time_s is the fastest sample (the capability figure);
// rates derive from it. median_s sits beside it. typical_s (since 1.8; 0: not recorded) is the
// median of the point's quietest look (Summary::typical_s): what the kernel takes as one of many
// in a row, each with its ordinary jitter, rather than its luckiest sample.
struct Timing {
  double time_s = 0;
  double median_s = 0;
  double cv = 0;
  int samples = 0;
  double typical_s = 0;
};

struct GemmPoint {
  GemmShape shape;
  Timing timing;
  double flops_per_s = 0;  // shape.flops() / timing.time_s
  std::string impl;        // implementation that ran, where known
  std::string layout;      // operand layouts, e.g. "row-major, weights [n][k]" or "tn"
  bool cold_weights = false;  // B read from main memory on every call (copies past the caches)
};

struct ConvPoint {
  ConvShape shape;
  std::string layout;  // "nchw", "nhwc", "blocked"
  Timing timing;
  double flops_per_s = 0;
  std::string impl;
  bool cold_weights = false;  // weights read from main memory on every call (copies past the caches)
};

// An elementwise, softmax or layer-norm op through the device's library over rows x cols elements
// (softmax and layernorm reduce along each row of `cols`). Ops: see vector_op_names().
struct VectorOpPoint {
  std::string op;
  DType dtype = DType::f32;
  std::int64_t rows = 0, cols = 0;
  Timing timing;
  double elements_per_s = 0;  // rows * cols / timing.time_s
  std::string impl;
};

struct MemoryPoint {
  std::string kernel;  // "copy", "scale", "add", "triad", "d2d_copy"
  std::int64_t bytes = 0;  // working set
  double Bps = 0;          // from the fastest sample
  double median_Bps = 0;
};

struct LevelBandwidth {
  std::string name;  // "L1", "L2", "L3", "DRAM", "HBM"
  std::optional<std::int64_t> bytes;
  double Bps = 0;
};

struct TransferSample {
  std::int64_t bytes = 0;
  double time_s = 0;
};

// time = latency_s + bytes / Bps, fitted over the points.
struct TransferFit {
  std::optional<double> latency_s;
  std::optional<double> Bps;
  std::vector<TransferSample> points;
};

struct Datasheet {
  std::map<std::string, double> flops_per_s;         // dense matrix peak per dtype
  std::map<std::string, double> vector_flops_per_s;  // vector/CUDA-core peak per dtype
  std::optional<double> memory_Bps;
  std::string source;  // how these were derived
};

struct Peaks {
  std::map<std::string, double> flops_per_s;         // best measured GEMM per dtype
  std::map<std::string, double> vector_flops_per_s;  // own FMA kernel per dtype
  std::optional<double> memory_Bps;                  // best DRAM/HBM bandwidth
};

struct Skipped {
  std::string what;
  std::string reason;
};

// A runtime's fixed cost of one op of a kind, where it differs from RuntimeRecord::op_s.
struct RuntimeKindCost {
  std::string kind;            // estimator row kind ("linear", "elementwise:relu", "reshape")
  std::optional<DType> dtype;  // nullopt: every dtype
  double op_s = 0;
  // The same call after the caches were replaced, as inside a model whose pass outgrows them
  // (since 1.18; nullopt: not measured).
  std::optional<double> cold_op_s;
};

// The rate of one of the runtime's own kernels; elements are an op's outputs, a pool's its window
// elements.
struct RuntimeOwnKernel {
  std::string kind;  // estimator row kind
  DType dtype = DType::f32;
  double elements_per_s = 0;
};

// How a runtime lays out 4-D activations when it keeps some of them channel-blocked.
struct RuntimeLayout {
  std::vector<std::string> blocked_ops;  // row kinds that run on blocked tensors
  int to_plain_copies = 1;               // copies one layout change makes
  int to_blocked_copies = 1;
  bool expand_broadcast = false;  // a broadcast operand of a blocked op is expanded first
  bool broadcast_plain = false;   // an elementwise op with a broadcast 4-D operand runs plain
  std::vector<std::int64_t> group_reorder_widths;  // channels per group run in a layout of their own
  // A dense convolution of more than `conv_small_input_channels` input channels, or a depthwise
  // one, runs blocked only where its channels are a multiple of this (1: every one does).
  std::int64_t conv_channel_multiple = 1;
  std::int64_t conv_small_input_channels = 0;
};

// Which op chains a runtime runs as one generated kernel (torch.compile's inductor), and the fixed
// cost of one call of its compiled graph (since 1.13).
struct RuntimeFusion {
  bool pointwise = false;  // consecutive elementwise ops
  // An elementwise op after a norm or softmax, and one whose output only a norm or softmax reads
  // (a prologue), in that op's kernel.
  bool into_reductions = false;
  bool into_products = false;  // an elementwise op after a linear, matmul or conv2d (its epilogue)
  double graph_s = 0;          // one call of the compiled graph (guards, wrapper), once a pass
};

// Where a framework that picks a convolution's implementation by its shape sends small calls
// (since 1.14): the implementation (as the runtime's conv points name theirs) that a forward
// convolution runs when it meets every condition, each found by trying shapes.
struct RuntimeConvDispatch {
  std::string impl;
  std::optional<std::int64_t> max_input_elements;  // batch x channels x pixels; nullopt: no bound
  std::int64_t max_batch = 1;
  std::int64_t max_window = 1;       // the window's side
  bool window_smaller_side = false;  // the bound holds for the window's smaller side, else larger
  bool strided = false;              // a stride above 1 stays there
  bool grouped = false;              // groups of several channels stay there
  bool depthwise = false;            // a group a channel stays there
  // The fixed cost of a call on each path, from chains of tiny calls (since 1.16; nullopt: not
  // measured): the least a call there takes beside its work. The paths differ tenfold here:
  // PyTorch's own small-call path against a library call that sets its primitive up each time.
  std::optional<double> op_s;         // a call the rule sends to `impl`
  std::optional<double> others_op_s;  // any other call
};

// What one runtime (the framework that runs a model) adds to the library's figures, measured by
// `calibrate --runtime` with generic probes (since 1.12). Fields: docs/runtimes.md.
struct RuntimeRecord {
  std::string runtime;    // "torch-jit", "torch-eager", "torch-compile", "torch-cudagraph", "onnxruntime"
  std::string device;     // id of the device it ran on
  std::string framework;  // "torch 1.13.1"
  nlohmann::json versions = nlohmann::json::object();  // library -> version, as the probe saw them
  std::string python;                                  // the interpreter that ran the probes
  int threads = 0;
  std::vector<DType> dtypes;
  nlohmann::json settings = nlohmann::json::object();  // what differs from a plain script
  double op_s = 0;
  // op_s of a call whose state the caches no longer hold (since 1.18; nullopt: not measured): a
  // model whose pass outgrows the caches pays it on every op.
  std::optional<double> cold_op_s;
  std::vector<RuntimeKindCost> kind_op_s;
  std::vector<RuntimeOwnKernel> own_kernels;
  std::optional<RuntimeLayout> layout;  // nullopt: every activation stays plain
  std::string conv_layout;              // "": the fastest measured
  bool linears_as_convolutions = false;
  std::vector<std::string> in_place;  // elementwise kinds run in place
  bool fuse_activations = false;
  // With fuse_activations: the activations (the estimator's names: "relu", "silu", ...) that
  // fold into the product before them; empty: every one the estimator folds (since 1.17).
  std::vector<std::string> fused_activations;
  // The runtime runs a batch norm that follows a convolution as an op of its own, where an ONNX
  // export and the library fold it into the convolution's weights (since 1.15).
  bool conv_batchnorm_apart = false;
  std::optional<RuntimeFusion> fusion;  // nullopt: every op runs as a kernel of its own
  // nullopt: the runtime's convolutions run one implementation whatever their shape.
  std::optional<RuntimeConvDispatch> conv_dispatch;
  std::vector<LevelBandwidth> memory_levels;  // the runtime's own kernels' bandwidth per level
  std::vector<GemmPoint> gemm;                // the runtime's own kernels, where it has them
  std::vector<ConvPoint> conv;
  nlohmann::json probes = nlohmann::json::array();  // the raw points behind the figures
  std::optional<double> calibration_s;
  // Fields of a later 1.x minor, written back as they were read.
  nlohmann::json extra = nlohmann::json::object();
};

struct Device {
  std::string id;    // "cpu", "cuda:0"
  std::string kind;  // "cpu", "gpu"
  std::string name;
  nlohmann::json libraries = nlohmann::json::object();
  nlohmann::json properties = nlohmann::json::object();
  std::optional<std::int64_t> memory_bytes;
  Datasheet datasheet;
  Peaks peaks;
  std::vector<GemmPoint> gemm;
  std::vector<ConvPoint> conv;
  std::vector<VectorOpPoint> vector_ops;  // since 1.4
  std::vector<MemoryPoint> memory_sweep;
  std::vector<LevelBandwidth> memory_levels;
  // Since 1.10 (empty: not measured): the in-place kernel's bandwidth per level, from the sweep's
  // `update` points; the levels' names and sizes are those of memory_levels.
  std::vector<LevelBandwidth> memory_in_place_levels;
  std::optional<double> overhead_op_s;
  std::optional<double> overhead_graph_op_s;
  // Keys: "h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable".
  std::map<std::string, TransferFit> transfers;
  std::optional<double> bidirectional_Bps;
  // Conditions of the run: threads, sentinel spread, points re-measured, ...
  nlohmann::json conditions = nlohmann::json::object();
  std::vector<Skipped> skipped;
  // Since 1.12: key = runtime name, or NAME:LABEL for a second calibration of one runtime.
  std::map<std::string, RuntimeRecord> runtimes;
};

struct Machine {
  std::string label;
  std::string hostname;
  std::string os;
  std::string cpu_model;
  int cpu_cores = 0;
  std::optional<std::int64_t> memory_bytes;
  std::optional<double> price_per_hour_usd;
};

struct ToolInfo {
  std::string name = "truepeak";
  std::string version;
  std::string git_sha;
  std::vector<std::string> argv;
};

struct Profile {
  std::string schema_version = schema_version_string();
  ToolInfo tool;
  std::string created_utc;
  bool complete = false;
  Machine machine;
  std::vector<Device> devices;

  // nullptr when absent.
  const Device* find_device(const std::string& id) const;
};

nlohmann::json to_json(const Profile& profile);
// `where` names the source in error messages (a file path). Throws InputError on a missing or
// mistyped field, and on a schema major version other than kSchemaMajor.
Profile profile_from_json(const nlohmann::json& doc, const std::string& where);

// One runtime record as stored under a device's `runtimes`. The reader names `where` (a file or
// a JSON path) in its errors and throws InputError, as profile_from_json does.
nlohmann::json to_json(const RuntimeRecord& record);
RuntimeRecord runtime_record_from_json(const nlohmann::json& doc, const std::string& where);

// Reads and parses a profile file. Throws InputError (unreadable, malformed, wrong version).
Profile read_profile(const std::string& path);
// Writes atomically: a temp file beside `path`, then rename. Throws InputError when the
// directory is not writable.
void write_profile(const std::string& path, const Profile& profile);
// The same for any text (used by other writers too).
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace truepeak
