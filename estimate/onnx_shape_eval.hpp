// Values of the small tensors that compute shapes in an ONNX graph (Shape -> Gather -> arithmetic
// -> Concat -> Reshape, a resize's output size from float scales), evaluated at load time from the
// bound input shapes. Used by the folding in onnx_fold.cpp; internal to the ONNX importer.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace truepeak::estimate::onnx_detail {

// The largest tensor evaluated: shape code handles a few numbers (a mask of 49 x 49 at most);
// anything larger is data, left to the runtime.
inline constexpr std::int64_t kMaxFoldElements = 4096;

// A tensor whose values are known. Integer and bool values are exact 64-bit integers; floating
// values are doubles, rounded to float32 after every operation on a float32 tensor, as the
// runtime computes them (floor(427 x (800 / 427)) must come out as the runtime's 799 or 800).
struct Known {
  std::int32_t type = onnx::TensorProto::INT64;  // onnx::TensorProto::DataType
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> ints;  // integer and bool types
  std::vector<double> reals;       // floating-point types

  bool is_real() const;
  std::size_t size() const { return is_real() ? reals.size() : ints.size(); }
  double real(std::size_t i) const { return is_real() ? reals[i] : static_cast<double>(ints[i]); }
};

bool is_real_type(std::int32_t type);     // the floating-point element types
bool is_integer_type(std::int32_t type);  // the signed and unsigned integer element types
bool is_integer_or_bool_type(std::int32_t type);

// nullopt for an external, too large, or non-numeric tensor.
std::optional<Known> known_from_proto(const onnx::TensorProto& tensor);
// The value as an initializer named `name`, of its own element type.
onnx::TensorProto known_to_proto(const Known& value, const std::string& name);

// Element count; nullopt for a negative dimension or a count past 64 bits.
std::optional<std::int64_t> element_count(const std::vector<std::int64_t>& dims);

// "[1, 3, 224, 224]" for short values, "int64 [49, 49]" (its shape) for longer ones.
std::string describe(const Known& value);

// The values of a node's outputs from its inputs' values (nullptr: not known) and shapes (nullptr:
// not known); nullopt when the node is not shape code this can evaluate (a float op on
// activations, a value past kMaxFoldElements, an overflow). Control flow (If, Loop) is not
// evaluated here: onnx_fold.cpp inlines it.
std::optional<std::vector<Known>> evaluate_node(
    const onnx::NodeProto& node, const std::vector<const Known*>& values,
    const std::vector<const std::vector<std::int64_t>*>& shapes);

}  // namespace truepeak::estimate::onnx_detail
