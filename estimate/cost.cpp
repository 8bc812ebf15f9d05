#include "estimate/cost.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "core/error.hpp"

namespace truepeak::estimate {
namespace {

// The operands and attributes the arithmetic below indexes and divides by. The readers check
// them where they build ops (builder.cpp, onnx_map.cpp); an op that breaks them is a reader's
// fault, stopped here before an index runs past a shape or a size divides by zero.
void check_operands(const Op& op, const Bindings& b) {
  const auto rank = [](const TensorRef& t) { return t.shape.size(); };
  const auto positive = [&](const TensorRef& t) {
    const auto dims = eval_shape(t.shape, b);
    return std::all_of(dims.begin(), dims.end(), [](std::int64_t d) { return d >= 1; });
  };
  bool ok = true;
  switch (op.kind) {
    case OpKind::linear:
      ok = !op.inputs.empty() && rank(op.inputs[0]) >= 1 && positive(op.inputs[0]) &&
           !op.weights.empty() && rank(op.weights[0]) == 2 && positive(op.weights[0]);
      break;
    case OpKind::matmul:
      ok = !op.inputs.empty() && op.inputs.size() + op.weights.size() >= 2 &&
           rank(op.inputs[0]) >= 2 && positive(op.inputs[0]) && rank(op.output) >= 2 &&
           positive(op.output);
      break;
    case OpKind::conv2d:
      ok = !op.inputs.empty() && rank(op.inputs[0]) == 4 && positive(op.inputs[0]) &&
           rank(op.output) == 4 && positive(op.output) && op.groups >= 1 && op.kernel_h >= 1 &&
           op.kernel_w >= 1 && op.stride >= 1 && op.dilation >= 1 && op.pad >= 0;
      break;
    case OpKind::attention:
      ok = op.inputs.size() == 3 &&
           std::all_of(op.inputs.begin(), op.inputs.end(),
                       [&](const TensorRef& t) { return rank(t) == 4 && positive(t); }) &&
           (op.state.empty() || (rank(op.state[0]) == 4 && positive(op.state[0])));
      break;
    case OpKind::embedding:
      ok = !op.weights.empty();
      break;
    default:
      break;
  }
  if (!ok)
    throw Error(fmt::format("internal error: op '{}' ({}) lacks the operands its cost needs",
                            op.name, to_string(op.kind)));
}

double elems(const TensorRef& t, const Bindings& b) {
  return static_cast<double>(num_elements(t.shape, b));
}

std::string dims_text(const Shape& shape, const Bindings& b) {
  std::string text = "[";
  const auto dims = eval_shape(shape, b);
  for (std::size_t i = 0; i < dims.size(); ++i) text += fmt::format("{}{}", i ? "," : "", dims[i]);
  text += ']';
  return text;
}

std::string gemm_text(const GemmCoords& g) {
  return fmt::format("b{}m{}n{}k{}", g.batch, g.m, g.n, g.k);
}

Work gemm_work(const std::string& phase, const GemmCoords& g, double bytes) {
  Work w;
  w.phase = phase;
  w.engine = Engine::gemm;
  w.flops = 2 * g.batch * g.m * g.n * g.k;
  w.bytes = bytes;
  w.products = {{g, w.flops}};
  w.shape = gemm_text(g);
  return w;
}

// Linear: x [M, K] (leading dims folded into M), W [K, N].
struct LinearDims {
  double m, k, n, bias;
};
LinearDims linear_dims(const Op& op, const Bindings& b) {
  const auto in = eval_shape(op.inputs[0].shape, b);
  double m = 1;
  for (std::size_t i = 0; i + 1 < in.size(); ++i) m *= static_cast<double>(in[i]);
  const auto w = eval_shape(op.weights[0].shape, b);
  return {m, static_cast<double>(w[0]), static_cast<double>(w[1]),
          op.weights.size() > 1 ? static_cast<double>(w[1]) : 0};
}

struct MatmulDims {
  double batch, m, n, k;
};
MatmulDims matmul_dims(const Op& op, const Bindings& b) {
  const auto out = eval_shape(op.output.shape, b);
  const auto a = eval_shape(op.inputs[0].shape, b);
  double batch = 1;
  for (std::size_t i = 0; i + 2 < out.size(); ++i) batch *= static_cast<double>(out[i]);
  const double k = static_cast<double>(op.transpose_a ? a[a.size() - 2] : a.back());
  return {batch, static_cast<double>(out[out.size() - 2]), static_cast<double>(out.back()), k};
}

struct ConvDims {
  double n, c, h, w, k, oh, ow, r, s, g;
};
ConvDims conv_dims(const Op& op, const Bindings& b) {
  const auto in = eval_shape(op.inputs[0].shape, b);
  const auto out = eval_shape(op.output.shape, b);
  return {static_cast<double>(in[0]),       static_cast<double>(in[1]),
          static_cast<double>(in[2]),       static_cast<double>(in[3]),
          static_cast<double>(out[1]),      static_cast<double>(out[2]),
          static_cast<double>(out[3]),      static_cast<double>(op.kernel_h),
          static_cast<double>(op.kernel_w), static_cast<double>(op.groups)};
}

Work conv_work(const Op& op, const std::string& phase, const GemmCoords& g, double flops,
               double bytes, const ConvDims& d) {
  Work w;
  w.phase = phase;
  w.engine = Engine::conv;
  w.flops = flops;
  w.bytes = bytes;
  w.products = {{g, flops}};
  w.groups = op.groups;
  w.depthwise = op.groups > 1 && d.g == d.c && d.g == d.k;
  if (phase == "forward") {
    w.stride = op.stride;
    w.in_channels = static_cast<std::int64_t>(d.c);
    w.out_channels = static_cast<std::int64_t>(d.k);
    w.conv_call = {static_cast<std::int64_t>(d.n), d.n * d.c * d.h * d.w, op.kernel_h, op.kernel_w,
                   op.stride, op.groups, w.depthwise};
  }
  w.shape = fmt::format("g{}mb{}ic{}ih{}oc{}kh{}sh{}ph{}dh{}", op.groups, d.n, d.c, d.h, d.k,
                        op.kernel_h, op.stride, op.pad, op.dilation);
  if (phase != "forward") w.shape += " (" + gemm_text(g) + ")";
  return w;
}

// Attention as the two (forward) or five (backward) GEMM products a fused kernel computes.
struct AttentionDims {
  double bh, sq, skv, d, causal_factor;
};
AttentionDims attention_dims(const Op& op, const Bindings& b) {
  const auto q = eval_shape(op.inputs[0].shape, b);
  const auto kv = eval_shape(op.state.empty() ? op.inputs[1].shape : op.state[0].shape, b);
  const double sq = static_cast<double>(q[2]), skv = static_cast<double>(kv[2]);
  // A causal kernel skips the masked half of the score matrix when queries and keys coincide.
  const double causal = op.causal && sq == skv && sq > 1 ? 0.5 : 1.0;
  return {static_cast<double>(q[0]) * static_cast<double>(q[1]), sq, skv, static_cast<double>(q[3]),
          causal};
}

}  // namespace

Work vector_work(const std::string& phase, double flops, double bytes, std::string shape) {
  Work w;
  w.phase = phase;
  w.engine = Engine::vector;
  w.flops = flops;
  w.bytes = bytes;
  w.shape = std::move(shape);
  return w;
}

namespace {
// Every function flops_per_element or measured_vector_op names.
constexpr std::array<std::string_view, 15> kElementwiseFns{
    "relu", "relu6", "gelu",  "gelu_tanh", "silu", "sigmoid", "tanh", "hardswish",
    "add",  "mul",   "scale", "rope",      "dropout", "clip", "exp"};
}  // namespace

bool is_known_elementwise(const std::string& fn) {
  return std::find(kElementwiseFns.begin(), kElementwiseFns.end(), fn) != kElementwiseFns.end();
}

std::string known_elementwise_list() { return fmt::format("{}", fmt::join(kElementwiseFns, ", ")); }

double flops_per_element(const Op& op) {
  switch (op.kind) {
    case OpKind::elementwise: {
      const auto& f = op.fn;
      const double operands = static_cast<double>(op.inputs.size() + op.weights.size());
      if (f == "add" || f == "mul") return std::max(1.0, operands - 1);
      // x * (1 + tanh(a * (x + b x^3))) / 2 for the tanh form; the erf form counted alike.
      if (f == "gelu" || f == "gelu_tanh") return 8;
      if (f == "tanh") return 6;
      if (f == "silu" || f == "sigmoid" || f == "hardswish") return 4;
      if (f == "rope") return 3;  // x * cos + rotate(x) * sin
      if (f == "relu6") return 2;
      if (f == "dropout") return 2;
      return 1;  // relu, scale, ...
    }
    case OpKind::norm:
      if (op.fn == "batchnorm") return 2;  // inference form: one scale and shift per element
      if (op.fn == "rmsnorm") return 4;    // square, sum, scale, affine
      return 7;                            // layernorm: mean, centre, square, sum, scale, affine
    case OpKind::softmax:
      return 5;  // max, subtract, exp, sum, divide
    default:
      return 0;
  }
}

std::string measured_vector_op(const Op& op) {
  switch (op.kind) {
    case OpKind::softmax:
      return "softmax";
    case OpKind::norm:
      return op.fn == "layernorm" ? "layernorm" : "";
    case OpKind::elementwise:
      if (op.fn == "clip") return "relu6";
      // A residual add: two activations of the output's shape (a broadcast or a parameter
      // operand runs as another kernel).
      if (op.fn == "add")
        return op.inputs.size() == 2 && op.weights.empty() &&
                       op.inputs[0].shape == op.output.shape && op.inputs[1].shape == op.output.shape
                   ? "add"
                   : "";
      for (const char* fn : {"relu", "relu6", "gelu", "gelu_tanh", "tanh", "sigmoid", "silu", "exp"})
        if (op.fn == fn) return op.fn;
      return "";
    default:
      return "";
  }
}

namespace {

// forward_work before the output's share is filled in.
std::vector<Work> forward_products(const Op& op, const Bindings& b, double e) {
  check_operands(op, b);
  const double out = elems(op.output, b);
  const double in = sum_elems(op.inputs, b);
  const double params = sum_elems(op.weights, b);
  switch (op.kind) {
    case OpKind::linear: {
      const auto d = linear_dims(op, b);
      Work w = gemm_work("forward", {1, d.m, d.n, d.k}, (in + params + out) * e);
      w.flops += d.bias * d.m;
      w.weight_bytes = params * e;
      return {w};
    }
    case OpKind::matmul: {
      const auto d = matmul_dims(op, b);
      return {gemm_work("forward", {d.batch, d.m, d.n, d.k}, (in + out) * e)};
    }
    case OpKind::conv2d: {
      const auto d = conv_dims(op, b);
      const double flops = 2 * d.n * d.k * d.oh * d.ow * (d.c / d.g) * d.r * d.s;
      const GemmCoords g{d.g, d.n * d.oh * d.ow, d.k / d.g, d.c / d.g * d.r * d.s};
      Work w = conv_work(op, "forward", g, flops, (in + params + out) * e, d);
      w.weight_bytes = params * e;
      return {w};
    }
    case OpKind::attention: {
      const auto d = attention_dims(op, b);
      Work w;
      w.phase = "forward";
      w.engine = Engine::gemm;
      const double f = 2 * d.bh * d.sq * d.skv * d.d * d.causal_factor;
      w.products = {{{d.bh, d.sq, d.skv, d.d}, f}, {{d.bh, d.sq, d.d, d.skv}, f}};
      w.flops = 2 * f;
      w.bytes = (in + sum_elems(op.state, b) + out) * e;
      w.shape =
          fmt::format("bh{}sq{}skv{}d{}{}", d.bh, d.sq, d.skv, d.d, op.causal ? " causal" : "");
      return {w};
    }
    case OpKind::elementwise:
    case OpKind::norm:
    case OpKind::softmax: {
      Work w = vector_work("forward", flops_per_element(op) * out, (in + params + out) * e,
                           dims_text(op.output.shape, b));
      w.weight_bytes = params * e;
      w.vector_op = measured_vector_op(op);
      w.elements = out;
      return {w};
    }
    case OpKind::pool: {
      // A pool's elements are those of its windows (a global pool reads its whole input for
      // one output).
      Work w = vector_work("forward",
                           out * static_cast<double>(op.kernel_h) * static_cast<double>(op.kernel_w),
                           (in + out) * e, dims_text(op.output.shape, b));
      w.elements = w.flops;
      return {w};
    }
    case OpKind::embedding:
      // Ids are 64-bit integers; only the gathered rows of the table are read.
      return {vector_work("forward", 0, in * 8 + 2 * out * e, dims_text(op.output.shape, b))};
    case OpKind::transpose:
    case OpKind::concat: {
      Work w = vector_work("forward", 0, (in + params + out) * e, dims_text(op.output.shape, b));
      w.elements = out;
      return {w};
    }
    case OpKind::reshape:
      return {};  // a view
  }
  return {};
}

}  // namespace

std::vector<Work> forward_work(const Op& op, const Bindings& b, double e) {
  auto work = forward_products(op, b, e);
  // An elementwise op, a norm or a softmax writes a tensor of its input's shape, which runtimes
  // write in place or into a buffer an input just left: no fresh output (`output_bytes` 0).
  const bool in_place = op.kind == OpKind::elementwise || op.kind == OpKind::norm ||
                        op.kind == OpKind::softmax;
  const double written = in_place ? 0 : elems(op.output, b) * e;
  double all_bytes = 0;
  for (const auto& w : work) all_bytes += w.bytes;
  // Several kernels of one op share its output in proportion to their bytes.
  for (auto& w : work)
    w.output_bytes = all_bytes > 0 ? std::min(w.bytes, written * w.bytes / all_bytes) : 0;
  return work;
}

std::vector<Work> backward_work(const Op& op, const Bindings& b, double e,
                                const std::vector<bool>& needs_grad) {
  check_operands(op, b);
  auto need = [&](std::size_t i) { return i < needs_grad.size() && needs_grad[i]; };
  const double out = elems(op.output, b);
  const double in = sum_elems(op.inputs, b);
  const double params = sum_elems(op.weights, b);
  std::vector<Work> work;
  switch (op.kind) {
    case OpKind::linear: {
      const auto d = linear_dims(op, b);
      // dX[M, K] = dY[M, N] W^T ; dW[K, N] = X^T dY (+ the bias gradient, a sum over M)
      if (need(0)) work.push_back(gemm_work("dgrad", {1, d.m, d.k, d.n}, (out + params + in) * e));
      Work w = gemm_work("wgrad", {1, d.k, d.n, d.m}, (in + out + params) * e);
      w.flops += d.bias * d.m;
      work.push_back(w);
      return work;
    }
    case OpKind::matmul: {
      const auto d = matmul_dims(op, b);
      // A constant operand (an ONNX graph's) is a weight.
      const double a = elems(op.inputs[0], b);
      const double bb = op.inputs.size() > 1 ? elems(op.inputs[1], b) : elems(op.weights[0], b);
      if (need(0)) work.push_back(gemm_work("dgrad", {d.batch, d.m, d.k, d.n}, (out + bb + a) * e));
      if (need(1)) work.push_back(gemm_work("dgrad", {d.batch, d.k, d.n, d.m}, (out + a + bb) * e));
      return work;
    }
    case OpKind::conv2d: {
      const auto d = conv_dims(op, b);
      const double flops = 2 * d.n * d.k * d.oh * d.ow * (d.c / d.g) * d.r * d.s;
      // dgrad: dX[N*H*W, C/g] from dY and W (a transposed convolution, as many MACs as forward);
      // wgrad: dW[K/g, C/g*R*S] = dY^T[K/g, N*OH*OW] im2col(X).
      const double stride2 = static_cast<double>(op.stride) * static_cast<double>(op.stride);
      if (need(0))
        work.push_back(conv_work(
            op, "dgrad",
            {d.g, d.n * d.h * d.w, d.c / d.g, std::max(1.0, d.k / d.g * d.r * d.s / stride2)},
            flops, (out + params + in) * e, d));
      work.push_back(conv_work(op, "wgrad",
                               {d.g, d.k / d.g, d.c / d.g * d.r * d.s, d.n * d.oh * d.ow}, flops,
                               (in + out + params) * e, d));
      return work;
    }
    case OpKind::attention: {
      const auto d = attention_dims(op, b);
      // Flash-style backward: recompute S = QK^T, then dV = P^T dO, dP = dO V^T, dQ = dS K, dK =
      // dS^T Q.
      const double f = 2 * d.bh * d.sq * d.skv * d.d * d.causal_factor;
      Work w;
      w.phase = "dgrad";
      w.engine = Engine::gemm;
      w.products = {{{d.bh, d.sq, d.skv, d.d}, f},
                    {{d.bh, d.skv, d.d, d.sq}, f},
                    {{d.bh, d.sq, d.skv, d.d}, f},
                    {{d.bh, d.sq, d.d, d.skv}, f},
                    {{d.bh, d.skv, d.d, d.sq}, f}};
      w.flops = 5 * f;
      w.bytes = (2 * in + 2 * out) * e;  // q, k, v, o, dO read; dq, dk, dv written
      w.shape = fmt::format("bh{}sq{}skv{}d{}", d.bh, d.sq, d.skv, d.d);
      return {w};
    }
    case OpKind::elementwise: {
      const auto& f = op.fn;
      if (f == "add") {
        // The gradient passes through; broadcast operands (a position table) need a reduction.
        double reduce = 0;
        for (std::size_t i = 0; i < op.inputs.size(); ++i)
          if (need(i) && elems(op.inputs[i], b) < out) reduce += out + elems(op.inputs[i], b);
        if (!op.weights.empty()) reduce += out + params;
        if (reduce > 0)
          work.push_back(vector_work("backward", out, reduce * e, dims_text(op.output.shape, b)));
        return work;
      }
      bool any = !op.weights.empty();
      for (std::size_t i = 0; i < op.inputs.size(); ++i) any = any || need(i);
      if (!any) return work;
      // Reads dY and every operand, writes the operands' gradients.
      const double bytes = f == "mul" ? (out + 2 * (in + params)) * e : (out + 2 * in) * e;
      work.push_back(vector_work("backward", flops_per_element(op) * out * 2, bytes,
                                 dims_text(op.output.shape, b)));
      return work;
    }
    case OpKind::norm:
      work.push_back(vector_work("backward", flops_per_element(op) * out * 2,
                                 (2 * in + out + 2 * params) * e, dims_text(op.output.shape, b)));
      return work;
    case OpKind::softmax:
      if (need(0))
        work.push_back(
            vector_work("backward", 4 * out, 3 * out * e, dims_text(op.output.shape, b)));
      return work;
    case OpKind::pool:
      if (need(0))
        work.push_back(vector_work("backward", in, (is_max_pool(op) ? out + 2 * in : out + in) * e,
                                   dims_text(op.output.shape, b)));
      return work;
    case OpKind::embedding:
      // Dense table gradient: zero it, then add the rows of dY.
      work.push_back(
          vector_work("wgrad", out, (params + 2 * out) * e, dims_text(op.weights[0].shape, b)));
      return work;
    case OpKind::transpose:
    case OpKind::concat: {
      bool any = !op.weights.empty();
      for (std::size_t i = 0; i < op.inputs.size(); ++i) any = any || need(i);
      if (any)
        work.push_back(vector_work("backward", 0, 2 * out * e, dims_text(op.output.shape, b)));
      return work;
    }
    case OpKind::reshape:
      return work;
  }
  return work;
}

}  // namespace truepeak::estimate
