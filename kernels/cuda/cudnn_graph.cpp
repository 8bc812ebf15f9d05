#include "kernels/cuda/cudnn_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/error.hpp"
#include "kernels/cuda/conv_layout.hpp"
#include "kernels/cuda/cudnn_check.hpp"

namespace truepeak::cuda_detail {

void release_backend_descriptor(cudnnBackendDescriptor_t desc) noexcept {
  TP_CUDNN_CHECK_NOTHROW(cudnnBackendDestroyDescriptor(desc));
}

namespace {

// Unique ids of the three tensors in the graph and in every variant pack.
constexpr std::int64_t kX = 'x', kW = 'w', kY = 'y';

BackendDescriptor create(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t desc = nullptr;
  TP_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &desc));
  return BackendDescriptor(desc);
}

void set(const BackendDescriptor& d, cudnnBackendAttributeName_t name,
         cudnnBackendAttributeType_t type, std::int64_t count, const void* values) {
  TP_CUDNN_CHECK(cudnnBackendSetAttribute(d.get(), name, type, count, values));
}

void set_descriptor(const BackendDescriptor& d, cudnnBackendAttributeName_t name,
                    const BackendDescriptor& value) {
  cudnnBackendDescriptor_t raw = value.get();
  set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
}

// The handle attributes are deprecated in favour of device properties that older 9.x libraries
// do not know; the handle works with every 9.x.
void set_handle(const BackendDescriptor& d, bool plan, cudnnHandle_t handle) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  const cudnnBackendAttributeName_t name =
      plan ? CUDNN_ATTR_EXECUTION_PLAN_HANDLE : CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
#pragma GCC diagnostic pop
  set(d, name, CUDNN_TYPE_HANDLE, 1, &handle);
}

BackendDescriptor tensor(const GraphTensor& t, std::int64_t uid, cudnnDataType_t data_type) {
  BackendDescriptor d = create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const std::int64_t alignment = 16;  // every buffer is 256-byte aligned
  set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &data_type);
  set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, t.dims.data());
  set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, t.strides.data());
  set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  TP_CUDNN_CHECK(cudnnBackendFinalize(d.get()));
  return d;
}

BackendDescriptor convolution(const ConvShape& shape) {
  BackendDescriptor d = create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const std::int64_t spatial = 2;
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::array<std::int64_t, 2> pad{shape.pad, shape.pad}, stride{shape.stride, shape.stride},
      dilation{shape.dilation, shape.dilation};
  set(d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  set(d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  set(d, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  set(d, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad.data());
  set(d, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad.data());
  set(d, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride.data());
  set(d, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation.data());
  TP_CUDNN_CHECK(cudnnBackendFinalize(d.get()));
  return d;
}

// The engine of a configuration: its global index and notes.
struct EngineInfo {
  std::int64_t index = -1;
  EngineNotes notes;
};

EngineInfo engine_info(const BackendDescriptor& config) {
  BackendDescriptor engine = create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = engine.get();
  std::int64_t count = 0;
  TP_CUDNN_CHECK(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &raw));
  EngineInfo info;
  TP_CUDNN_CHECK(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                          CUDNN_TYPE_INT64, 1, &count, &info.index));
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> numerical{};
  if (cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                               CUDNN_TYPE_NUMERICAL_NOTE, numerical.size(), &count,
                               numerical.data()) == CUDNN_STATUS_SUCCESS) {
    for (std::int64_t i = 0; i < count; ++i) {
      info.notes.tensor_core |= numerical[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
      info.notes.down_converts |= numerical[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
    }
  }
  std::array<cudnnBackendBehaviorNote_t, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT> behavior{};
  if (cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                               CUDNN_TYPE_BEHAVIOR_NOTE, behavior.size(), &count,
                               behavior.data()) == CUDNN_STATUS_SUCCESS) {
    for (std::int64_t i = 0; i < count; ++i)
      info.notes.runtime_compiled |= behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
  }
  return info;
}

// The engine configurations one heuristic mode proposes for the graph, best first; empty when
// the mode has none for it.
std::vector<BackendDescriptor> heuristic_configs(const BackendDescriptor& graph,
                                                 cudnnBackendHeurMode_t mode) {
  BackendDescriptor heuristics = create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  set_descriptor(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  set(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (cudnnBackendFinalize(heuristics.get()) != CUDNN_STATUS_SUCCESS) return {};
  std::int64_t count = 0;
  if (cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0)
    return {};
  std::vector<BackendDescriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    configs.push_back(create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back().get());
  }
  std::int64_t returned = 0;
  if (cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                               raw.data()) != CUDNN_STATUS_SUCCESS)
    return {};
  configs.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(returned, 0, count)));
  return configs;
}

}  // namespace

GraphConv::GraphConv(cudnnHandle_t handle, const ConvShape& shape, bool nhwc,
                     cudnnDataType_t data_type, std::int64_t workspace_limit_bytes,
                     std::size_t max_plans, CompileBudget& compile_budget)
    : handle_(handle) {
  const ConvGraphTensors t = conv_graph_tensors(shape, nhwc);
  keep_.push_back(tensor(t.x, kX, data_type));
  keep_.push_back(tensor(t.w, kW, data_type));
  keep_.push_back(tensor(t.y, kY, data_type));
  keep_.push_back(convolution(shape));
  BackendDescriptor op = create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  const float alpha = 1.0f, beta = 0.0f;
  set_descriptor(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, keep_[0]);
  set_descriptor(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, keep_[1]);
  set_descriptor(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, keep_[2]);
  set_descriptor(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, keep_[3]);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  TP_CUDNN_CHECK(cudnnBackendFinalize(op.get()));
  graph_ = create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set_descriptor(graph_, CUDNN_ATTR_OPERATIONGRAPH_OPS, op);
  set_handle(graph_, false, handle);
  TP_CUDNN_CHECK(cudnnBackendFinalize(graph_.get()));
  keep_.push_back(std::move(op));

  std::map<std::string, int> left_out;  // reason -> engines
  EngineChoice choice(shape.dtype, compile_budget);
  const std::pair<cudnnBackendHeurMode_t, const char*> modes[] = {
      {CUDNN_HEUR_MODE_A, "A"}, {CUDNN_HEUR_MODE_FALLBACK, "fallback"}};
  for (const auto& [mode, mode_name] : modes) {
    if (plans_.size() >= max_plans) break;
    const bool fallback = mode == CUDNN_HEUR_MODE_FALLBACK;
    std::vector<BackendDescriptor> configs = heuristic_configs(graph_, mode);
    for (std::size_t rank = 0; rank < configs.size() && plans_.size() < max_plans; ++rank) {
      // One configuration that cuDNN cannot describe or plan costs that configuration alone.
      try {
        const EngineInfo engine = engine_info(configs[rank]);
        if (choice.already_planned(fallback, engine.index)) continue;
        if (const auto reason = choice.refused(engine.notes)) {
          ++left_out[*reason];
          continue;
        }
        BackendDescriptor plan = create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        set_handle(plan, true, handle);
        set_descriptor(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configs[rank]);
        choice.trying(engine.notes);
        if (cudnnBackendFinalize(plan.get()) != CUDNN_STATUS_SUCCESS) {
          ++left_out["failed to build"];
          continue;
        }
        std::int64_t workspace = 0, count = 0;
        TP_CUDNN_CHECK(cudnnBackendGetAttribute(plan.get(),
                                                CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                CUDNN_TYPE_INT64, 1, &count, &workspace));
        if (workspace > workspace_limit_bytes) {
          ++left_out["over the workspace limit"];
          continue;
        }
        choice.planned(fallback, engine.index);
        plans_.push_back(
            {std::move(plan), workspace,
             fmt::format("engine={}{} heur={}#{}", engine.index,
                         engine.notes.runtime_compiled ? " (compiled)" : "", mode_name, rank)});
        keep_.push_back(std::move(configs[rank]));
      } catch (const Error&) {
        ++left_out["unreadable"];
      }
    }
  }
  for (const auto& [reason, engines] : left_out)
    notes_ += fmt::format("{}{} {}", notes_.empty() ? "" : ", ", engines, reason);
}

cudnnStatus_t GraphConv::execute(std::size_t index, void* x, void* w, void* y, void* workspace) {
  const std::array<void*, 4> key{x, w, y, workspace};
  auto found = variant_packs_.find(key);
  if (found == variant_packs_.end()) {
    cudnnBackendDescriptor_t raw = nullptr;
    if (const auto status =
            cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &raw);
        status != CUDNN_STATUS_SUCCESS)
      return status;
    BackendDescriptor pack(raw);
    const std::array<std::int64_t, 3> uids{kX, kW, kY};
    std::array<void*, 3> pointers{x, w, y};
    for (const cudnnStatus_t status :
         {cudnnBackendSetAttribute(raw, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3,
                                   uids.data()),
          cudnnBackendSetAttribute(raw, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                   3, pointers.data()),
          cudnnBackendSetAttribute(raw, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                   &workspace),
          cudnnBackendFinalize(raw)})
      if (status != CUDNN_STATUS_SUCCESS) return status;
    found = variant_packs_.emplace(key, std::move(pack)).first;
  }
  return cudnnBackendExecute(handle_, plans_.at(index).plan.get(), found->second.get());
}

}  // namespace truepeak::cuda_detail
