#include "kernels/cuda/conv_layout.hpp"

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

std::optional<std::string> CompileBudget::refuse(int built_for_layer) const {
  if (built_for_layer > 0) return "compiled at run time (one a layer)";
  if (left_s_ <= 0) return "compiled at run time (compile budget spent)";
  return std::nullopt;
}

}  // namespace truepeak::cuda_detail
