// Small models and the fixture profiles for the estimator tests.
#pragma once

#include <string>

#include "core/profile.hpp"
#include "estimate/builder.hpp"
#include "estimate/estimator.hpp"

namespace truepeak::estimate::testing {

inline Profile fixture(const std::string& name) {
  return read_profile(std::string(TRUEPEAK_SOURCE_DIR) + "/tests/estimate/data/" + name);
}

// One op model: y = x W, x [N, k], W [k, n] (no bias).
inline Model linear_model(std::int64_t k, std::int64_t n) {
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), k});
  b.add(make_linear("fc", x, n, false));
  Model m;
  m.name = "linear";
  m.forward = b.take();
  return m;
}

// `count` chained linears of width x width (no bias): x [N, width] -> ... -> [N, width].
inline Model linear_stack(int count, std::int64_t width) {
  GraphBuilder b;
  const TensorRef* x = &b.input("x", {Dim::symbol("N"), width});
  for (int i = 0; i < count; ++i)
    x = &b.add(make_linear("fc" + std::to_string(i), *x, width, false));
  Model m;
  m.name = "stack";
  m.forward = b.take();
  return m;
}

// One convolution of `c` -> `k` channels over `hw` x `hw` (no bias), named `name`: by default
// a 1x1 of stride 1.
inline Model one_conv_model(std::int64_t c, std::int64_t hw, std::int64_t k,
                            const ConvAttrs& attrs = {1, 1, 1, 0, 1, 1}, const std::string& name = "c") {
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), c, hw, hw});
  b.add(make_conv2d(name, x, k, attrs, false));
  Model m;
  m.name = "conv";
  m.forward = b.take();
  return m;
}

// x [N, in] -> linear a to `hidden` (with a bias if `bias_first`) -> linear b to `out`, no bias.
inline Model two_linears(const std::string& a, const std::string& b_name, std::int64_t in,
                         std::int64_t hidden, std::int64_t out, bool bias_first) {
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), in});
  const auto& h = b.add(make_linear(a, x, hidden, bias_first));
  b.add(make_linear(b_name, h, out, false));
  Model m;
  m.name = "linears";
  m.forward = b.take();
  return m;
}

inline Model relu_model(std::int64_t width) {
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), width});
  b.add(make_elementwise("relu", "relu", {x}));
  Model m;
  m.name = "relu";
  m.forward = b.take();
  return m;
}

// A measured vector op of 256 x 1024 elements at `elements_per_s`.
inline VectorOpPoint vector_op_point(const std::string& op, DType dtype, double elements_per_s) {
  VectorOpPoint v;
  v.op = op;
  v.dtype = dtype;
  v.rows = 256;
  v.cols = 1024;
  const double time_s = 262144 / elements_per_s;
  v.timing = {time_s, time_s, 0, 10};
  v.elements_per_s = elements_per_s;
  return v;
}

inline Options batch(std::int64_t n, DType dtype = DType::f32) {
  Options o;
  o.batch = n;
  o.dtype = dtype;
  return o;
}

}  // namespace truepeak::estimate::testing
