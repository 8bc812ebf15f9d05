// How a ConvShape is described to cuDNN's graph API, and which of its engines a measurement may
// use. Pure host code (no cuDNN types), so it is unit-tested without a GPU.
//
// The graph API always takes dimensions in N, C, H, W order (filters K, C/groups, R, S); the memory
// layout lives in the strides alone. Groups are not an attribute: they follow from the filter's
// channel count against the input's (C / (C/groups)).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/shapes.hpp"

namespace truepeak::cuda_detail {

struct GraphTensor {
  std::array<std::int64_t, 4> dims{};     // N, C, H, W (filters: K, C/groups, R, S)
  std::array<std::int64_t, 4> strides{};  // in elements, in the same order as dims
  std::int64_t elements() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
};

struct ConvGraphTensors {
  GraphTensor x, w, y;
};

// Packed NHWC (channels innermost; filters KRSC) or NCHW (filters KCRS) tensors of the layer.
ConvGraphTensors conv_graph_tensors(const ConvShape& shape, bool nhwc);

// What cuDNN says of one engine, in the words the choice below needs.
struct EngineNotes {
  bool tensor_core = false;       // runs on tensor cores (for f32 data: TF32)
  bool down_converts = false;     // converts its inputs to a narrower type first
  bool runtime_compiled = false;  // its kernel is compiled when the plan is built
};

// Why a measurement of `dtype` does not use this engine, or nullopt. f32 is measured as true f32
// arithmetic: an engine that rounds its inputs to TF32 measures another dtype (the legacy API's
// FMA math type ensures the same). f16 and bf16 take the engines as they come.
std::optional<std::string> engine_excluded(DType dtype, const EngineNotes& notes);

// Runtime-compiled engines compile a kernel for their layer when the plan is built (a fraction of
// a second to a second each), and for some layers (16-bit depthwise ones on Hopper) the
// heuristics rank one first, as frameworks run it. A calibration tries to build at most one such
// plan a layer, and at most `plans` in all: a count, so that two runs build the same ones.
class CompileBudget {
 public:
  explicit CompileBudget(int plans) : left_(plans) {}
  // Why the next runtime-compiled plan of a layer is not built, or nullopt;
  // `tried_for_layer`: how many the layer has tried already.
  std::optional<std::string> refuse(int tried_for_layer) const;
  void spend() { --left_; }
  int left() const { return left_; }

 private:
  int left_;
};

// Which engine configurations of one layer's heuristic lists (mode A's, then the fallback
// list's) get a plan built and timed.
class EngineChoice {
 public:
  EngineChoice(DType dtype, CompileBudget& budget) : dtype_(dtype), budget_(budget) {}
  // A fallback configuration of an engine that mode A's list already gave a plan: nothing new.
  bool already_planned(bool fallback, std::int64_t engine) const;
  // Why this engine's plan is not built, or nullopt.
  std::optional<std::string> refused(const EngineNotes& notes) const;
  // A plan of this engine is about to be built: a runtime-compiled one spends the budget whether
  // or not the build succeeds.
  void trying(const EngineNotes& notes);
  // Its plan was built (from mode A's list unless `fallback`).
  void planned(bool fallback, std::int64_t engine);

 private:
  DType dtype_;
  CompileBudget& budget_;
  int compiled_tries_ = 0;
  std::vector<std::int64_t> planned_;  // engines mode A's list gave a plan
};

}  // namespace truepeak::cuda_detail
