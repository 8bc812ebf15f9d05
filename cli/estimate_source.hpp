// What `truepeak estimate` was asked, and the model it reads: a zoo name, a model JSON, or an
// ONNX graph bound to one batch at a time.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "estimate/estimator.hpp"
#include "estimate/onnx_import.hpp"
#include "estimate/print.hpp"

namespace truepeak::cli {

struct EstimateArgs {
  std::string profile;
  std::string model;
  std::vector<std::int64_t> batches;
  std::string dtype;  // empty: the runtime's own dtype with --runtime, else f32
  std::string mode = "inference";
  std::string optimizer = "adam";
  std::int64_t seq = 0;
  std::int64_t context = 0;
  std::string device;
  std::string format = "table";
  std::string runtime;  // a runtime record of the profile (calibrate --runtime)
  bool sweep = false;
  double max_latency_ms = 0;
  // Which of the numeric flags were given: a given value out of range is an error, not a default.
  bool seq_given = false, context_given = false, max_latency_given = false;
  std::int64_t data_dependent_size = 0;  // ONNX: sizes computed from data; 0: the importer's default
  bool data_dependent_size_given = false;
  std::string conv_layout;
  std::optional<double> op_overhead_us;   // unset: the profile's per-op overhead
  std::vector<std::string> blocked_ops;   // the runtime's blocked-layout ops; empty: no layout model
  std::optional<std::string> layout_copies;  // copies per layout change: to plain, to blocked
  std::vector<std::string> own_rates;     // KIND=ELEMENTS_PER_S: the runtime's own kernels
  std::vector<std::string> kind_overheads;  // KIND=MICROSECONDS: the runtime's dispatch by kind
  bool expand_broadcast = false;             // blocked broadcast operands are expanded
  std::vector<std::string> group_reorders;   // channels per group of grouped convs in a layout of their own
  bool linears_as_convs = false;             // linear layers run as 1x1 convolutions
  std::vector<std::string> in_place_ops;     // elementwise kinds the runtime runs in place
  bool typical_times = false;                // points at their typical time, not fastest sample
  std::vector<std::string> input_shapes;  // ONNX: NAME=1x3x224x224
  bool fuse_activations = false;          // --fuse-activations
  estimate::ImportRules import_rules;     // ONNX: what the import folds (the runtime's and the flag's)
};

// Zoo and JSON models hold the batch as a symbol; an ONNX graph is bound to one batch when read.
class ModelSource {
 public:
  // Reads a zoo or JSON model now (printing what its reader could only guess at); an ONNX graph
  // is read by get(), once per batch.
  explicit ModelSource(const EstimateArgs& args);
  const estimate::Model& get(std::int64_t batch);
  bool is_onnx() const { return onnx_; }
  // The sizes computed from data that the last graph read took as given, for the printers.
  void describe_assumptions(estimate::PrintContext& ctx) const;
  // An estimate of a graph bound to `batch` samples, labelled with its batch; an ONNX graph's is
  // the batch it was read with (--input-shape may fix it), its throughput that many samples a run.
  estimate::Estimate relabel(estimate::Estimate est, std::int64_t batch) const;
  // ONNX graphs are concrete: the batch is already in their shapes.
  std::int64_t graph_batch(std::int64_t batch) const { return onnx_ ? 1 : batch; }

 private:
  const EstimateArgs& args_;
  std::optional<estimate::Model> model_;
  bool onnx_ = false;
  bool warned_ = false;  // the import's warnings are printed once, not per batch
  std::vector<std::string> assumption_lines_;
  nlohmann::json assumptions_;
  std::int64_t batch_ = 0;
  std::int64_t bound_batch_ = 0;
};

}  // namespace truepeak::cli
