// One forward convolution through cuDNN's graph (backend) API: the operation graph, the engine
// configurations its heuristics (mode A, then the fallback list) propose, and an execution plan
// for each one that builds. Frameworks run convolutions this way (PyTorch's cuDNN v8 path), and
// its engines cover layers the legacy API's few algorithms run slowly (1x1 and depthwise layers
// on Hopper). Host code; the caller times the plans and keeps the fastest.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/shapes.hpp"
#include "kernels/cuda/conv_layout.hpp"
#include "kernels/cuda/unique_handle.hpp"

namespace truepeak::cuda_detail {

void release_backend_descriptor(cudnnBackendDescriptor_t desc) noexcept;
using BackendDescriptor = UniqueHandle<cudnnBackendDescriptor_t, release_backend_descriptor>;

struct GraphPlan {
  BackendDescriptor plan;
  std::int64_t workspace_bytes = 0;
  std::string name;  // engine, heuristic and rank, e.g. "engine=3 heur=A#0"
};

class GraphConv {
 public:
  // Plans for at most `max_plans` engines that need no more than `workspace_limit_bytes`;
  // runtime-compiled ones as `compile_budget` allows (EngineChoice). Engines left out, plans that
  // fail to build and configurations cuDNN cannot describe are counted in notes(). Throws
  // truepeak::Error only when the operation graph itself cannot be built.
  GraphConv(cudnnHandle_t handle, const ConvShape& shape, bool nhwc, cudnnDataType_t data_type,
            std::int64_t workspace_limit_bytes, std::size_t max_plans,
            CompileBudget& compile_budget);
  GraphConv(const GraphConv&) = delete;
  GraphConv& operator=(const GraphConv&) = delete;

  const std::vector<GraphPlan>& plans() const { return plans_; }
  // What the heuristics proposed that is not among plans(), e.g. "1 compiled at run time, 2 failed
  // to build".
  const std::string& notes() const { return notes_; }

  // Queues plan `index` on the handle's stream with these buffers; cuDNN's status, never a throw.
  // The variant pack of each set of pointers is built once and kept, so that a timed loop pays
  // only the launch.
  cudnnStatus_t execute(std::size_t index, void* x, void* w, void* y, void* workspace);

 private:
  cudnnHandle_t handle_;
  // Every descriptor the plans were built from lives as long as they do.
  std::vector<BackendDescriptor> keep_;
  BackendDescriptor graph_;
  std::vector<GraphPlan> plans_;
  std::string notes_;
  std::map<std::array<void*, 4>, BackendDescriptor> variant_packs_;
};

}  // namespace truepeak::cuda_detail
