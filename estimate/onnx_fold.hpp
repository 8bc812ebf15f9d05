// Load-time evaluation of the shape code in an ONNX graph (see onnx_fold.cpp).
#pragma once

#include <onnx/onnx_pb.h>

namespace truepeak::estimate::onnx_detail {

// Evaluates the small tensors computable from the bound input shapes (Shape, Gather, Concat,
// Slice, integer and float arithmetic, ... : onnx_shape_eval.hpp) and rewires their readers to
// initializers holding the values; replaces an If whose condition is known by its branch and
// unrolls a Loop whose trip count and condition are known. Returns how many tensors it folded
// plus how many If/Loop nodes it replaced; run shape inference again when that is not zero.
int fold_shape_tensors(onnx::ModelProto& model);

}  // namespace truepeak::estimate::onnx_detail
