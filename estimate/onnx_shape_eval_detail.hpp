// Internal to onnx_shape_eval*.cpp: elements, attribute readers, tensor builders, the operators.
// One element is an integer or a real, stored as its element type stores it; the readers, the
// builders and the broadcasting are shared by the operators' files. Not part of the importer's
// interface (onnx_shape_eval.hpp).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "estimate/onnx_shape_eval.hpp"

namespace truepeak::estimate::onnx_detail::shape_eval {

using Dims = std::vector<std::int64_t>;
using T = onnx::TensorProto;  // its element types: T::INT64, T::FLOAT, ...

// ---- elements (onnx_shape_eval_known.cpp) ----------------------------------------------------

// A value as a tensor of `type` stores it.
double round_to(std::int32_t type, double v);

// One element, integer or real.
struct Num {
  bool real = false;
  std::int64_t i = 0;
  double r = 0;
  double as_real() const { return real ? r : static_cast<double>(i); }
  bool truthy() const { return real ? r != 0 : i != 0; }
};

inline Num int_num(std::int64_t v) { return Num{false, v, 0}; }
inline Num real_num(double v) { return Num{true, 0, v}; }

Num element(const Known& t, std::size_t i);

// Appends `v` to `out` as its type holds it; false where it does not fit.
bool append(Known& out, const Num& v);

// ---- attributes, axes and tensor builders (onnx_shape_eval.cpp) -------------------------------

// An attribute's value; `fallback`, nullopt or nullptr where the node has none of that type.
std::int64_t attr_int(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback);
std::optional<Dims> attr_ints(const onnx::NodeProto& node, const std::string& name);
const onnx::TensorProto* attr_tensor(const onnx::NodeProto& node, const std::string& name);

// Axis `a` of a rank-`rank` tensor, negative counted from the end; nullopt when out of range.
std::optional<std::int64_t> axis_of(std::int64_t a, std::int64_t rank);

inline std::int64_t rank_of(const Known& t) { return static_cast<std::int64_t>(t.dims.size()); }

// Row-major strides of `dims`.
Dims strides_of(const Dims& dims);

// An empty tensor of `type` and `dims`, or nullopt when its element count is past the limit.
std::optional<Known> shaped(std::int32_t type, Dims dims);

// The output of a gather of elements: `source[k]` for each k in `indices` (positions in `in`).
Known pick(const Known& in, Dims dims, const std::vector<std::int64_t>& indices);

// Calls fn(multi-index) for each element of a tensor of `dims`, in row-major order.
void for_each_index(const Dims& dims, const std::function<void(const Dims&)>& fn);

// The axes a node names (an attribute before the opset that made them an input), normalized to
// `rank`; nullopt when they are not known or out of range. Empty: none given.
std::optional<Dims> node_axes(const onnx::NodeProto& node, const std::vector<const Known*>& values,
                              std::size_t input, std::int64_t rank);

// ---- elementwise operators (onnx_shape_eval_elementwise.cpp) ----------------------------------

using NumFn = std::function<std::optional<Num>(const std::vector<Num>&)>;

// Elementwise over broadcast inputs, writing a tensor of `type`.
std::optional<Known> broadcast(const std::vector<const Known*>& in, std::int32_t type,
                               const NumFn& fn);

// The elementwise operators of shape code: (inputs at least, at most, result type), and the
// function. A result type of -1 is the first input's, BOOL that of a comparison.
struct Elementwise {
  int min_inputs;
  int max_inputs;
  std::int32_t result;  // -1: the type of the first input (of the second for Where)
  std::function<std::optional<Num>(const std::vector<Num>&, const onnx::NodeProto&)> fn;
};

const std::map<std::string, Elementwise>& elementwise_ops();

// ---- operators that move elements (onnx_shape_eval_layout.cpp) --------------------------------

std::optional<Known> eval_reshape(const Known& data, const Known& shape, bool allow_zero);
std::optional<Known> eval_transpose(const onnx::NodeProto& node, const Known& in);
std::optional<Known> eval_concat(const onnx::NodeProto& node, const std::vector<const Known*>& in);
std::optional<Known> eval_gather(const onnx::NodeProto& node, const Known& data,
                                 const Known& indices);
std::optional<Known> eval_slice(const onnx::NodeProto& node, const std::vector<const Known*>& in);
std::optional<Known> eval_expand(const Known& data, const Known& shape);
std::optional<Known> eval_tile(const Known& data, const Known& repeats);
std::optional<std::vector<Known>> eval_split(const onnx::NodeProto& node,
                                             const std::vector<const Known*>& in);

// ---- operators that make new elements (onnx_shape_eval_generate.cpp) -------------------------

std::optional<Known> eval_constant(const onnx::NodeProto& node);
std::optional<Known> eval_cast(const Known& in, std::int32_t to);
std::optional<Known> eval_constant_of_shape(const onnx::NodeProto& node, const Known& shape);
std::optional<Known> eval_range(const Known& start, const Known& limit, const Known& delta);
std::optional<Known> eval_reduce(const onnx::NodeProto& node, const std::vector<const Known*>& in);
std::optional<Known> eval_nonzero(const Known& in);

}  // namespace truepeak::estimate::onnx_detail::shape_eval
