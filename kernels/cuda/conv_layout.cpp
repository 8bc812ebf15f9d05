#include "kernels/cuda/conv_layout.hpp"

#include <algorithm>

namespace truepeak::cuda_detail {

namespace {
// dims in N, C, H, W order; packed strides of that layout.
GraphTensor packed(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, bool nhwc) {
  GraphTensor t;
  t.dims = {n, c, h, w};
  if (nhwc)
    t.strides = {h * w * c, 1, w * c, c};
  else
    t.strides = {c * h * w, h * w, w, 1};
  return t;
}
}  // namespace

ConvGraphTensors conv_graph_tensors(const ConvShape& shape, bool nhwc) {
  return {packed(shape.n, shape.c, shape.h, shape.w, nhwc),
          packed(shape.k, shape.c / shape.groups, shape.r, shape.s, nhwc),
          packed(shape.n, shape.k, shape.out_h(), shape.out_w(), nhwc)};
}

std::optional<std::string> engine_excluded(DType dtype, const EngineNotes& notes) {
  if (dtype == DType::f32 && (notes.tensor_core || notes.down_converts))
    return "TF32 (f32 inputs rounded for the tensor cores)";
  return std::nullopt;
}

std::optional<std::string> CompileBudget::refuse(int tried_for_layer) const {
  if (tried_for_layer > 0) return "compiled at run time (one a layer)";
  if (left_ <= 0) return "compiled at run time (the calibration's budget is spent)";
  return std::nullopt;
}

bool EngineChoice::already_planned(bool fallback, std::int64_t engine) const {
  return fallback && std::find(planned_.begin(), planned_.end(), engine) != planned_.end();
}

std::optional<std::string> EngineChoice::refused(const EngineNotes& notes) const {
  if (auto reason = engine_excluded(dtype_, notes)) return reason;
  if (notes.runtime_compiled) return budget_.refuse(compiled_tries_);
  return std::nullopt;
}

void EngineChoice::trying(const EngineNotes& notes) {
  if (!notes.runtime_compiled) return;
  ++compiled_tries_;
  budget_.spend();
}

void EngineChoice::planned(bool fallback, std::int64_t engine) {
  if (!fallback) planned_.push_back(engine);
}

}  // namespace truepeak::cuda_detail
