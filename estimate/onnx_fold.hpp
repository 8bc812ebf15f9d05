// Load-time evaluation of the integer shape arithmetic in an ONNX graph (see onnx_fold.cpp).
#pragma once

#include <onnx/onnx_pb.h>

namespace truepeak::estimate::onnx_detail {

// Evaluates the small integer tensors computable from the bound input shapes (Shape, Gather,
// Concat, Slice, arithmetic, ...) and rewires their readers to initializers holding the values.
// Returns how many tensors it folded; run shape inference again when that is not zero.
int fold_shape_tensors(onnx::ModelProto& model);

}  // namespace truepeak::estimate::onnx_detail
