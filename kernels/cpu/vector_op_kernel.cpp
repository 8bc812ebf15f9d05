// Elementwise, softmax and layer-norm ops through oneDNN: the ops between the GEMMs and
// convolutions of a model. The transcendental ones (gelu, tanh, sigmoid, silu, exp, softmax) are
// bound by arithmetic rather than memory on a CPU; their element rate is what the estimator needs.
// `add` is oneDNN's sum of two tensors, the residual add of frameworks that keep activations in
// oneDNN's formats (its implementation here runs far below the bandwidth of the caches);
// `add_padded` the same sum of two channel-blocked tensors whose channels leave the last block
// part-filled (24 channels in blocks of 16), which oneDNN runs in its reference implementation. The two
// reorders are the layout changes such a framework makes where an op it runs outside oneDNN meets
// one inside: a plain tensor of `rows` channels by `cols` positions into oneDNN's channel-blocked
// format, and back. The blocked tensors have the channel block of oneDNN's ISA here (aBcd16b with
// AVX-512, aBcd8b below it), as a framework's tensors on this CPU have.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "kernels/cpu/dnnl_check.hpp"
#include "kernels/cpu/onednn_kernels.hpp"
#include "kernels/cpu/random_fill.hpp"

namespace truepeak::cpu {
namespace {

constexpr float kLayerNormEpsilon = 1e-5f;

bool is_reorder(const std::string& op) { return op == "reorder_blocked" || op == "reorder_plain"; }
bool is_add(const std::string& op) { return op == "add" || op == "add_padded"; }

struct EltwiseAlgorithm {
  dnnl::algorithm algorithm;
  float alpha, beta;
};

EltwiseAlgorithm eltwise_algorithm(const std::string& op) {
  using alg = dnnl::algorithm;
  if (op == "relu") return {alg::eltwise_relu, 0.0f, 0.0f};
  if (op == "relu6") return {alg::eltwise_clip, 0.0f, 6.0f};
  if (op == "gelu") return {alg::eltwise_gelu_erf, 0.0f, 0.0f};
  if (op == "gelu_tanh") return {alg::eltwise_gelu_tanh, 0.0f, 0.0f};
  if (op == "tanh") return {alg::eltwise_tanh, 0.0f, 0.0f};
  if (op == "sigmoid") return {alg::eltwise_logistic, 0.0f, 0.0f};
  if (op == "silu") return {alg::eltwise_swish, 1.0f, 0.0f};
  if (op == "exp") return {alg::eltwise_exp, 0.0f, 0.0f};
  throw Unsupported(fmt::format("vector op '{}' is not an elementwise op of the CPU backend", op));
}

double reference_eltwise(const std::string& op, double x) {
  if (op == "relu") return std::max(x, 0.0);
  if (op == "relu6") return std::clamp(x, 0.0, 6.0);
  if (op == "gelu") return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  if (op == "gelu_tanh") {
    const double pi = std::acos(-1.0);
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
  }
  if (op == "tanh") return std::tanh(x);
  if (op == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (op == "silu") return x / (1.0 + std::exp(-x));
  return std::exp(x);
}

class VectorOpKernel final : public Kernel {
 public:
  VectorOpKernel(const OnednnContext& context, const VectorOpShape& shape)
      : context_(context), shape_(shape), block_(onednn_channel_block(onednn_effective_isa())) {
    if (shape.rows <= 0 || shape.cols <= 0)
      throw InputError(fmt::format("vector op {}: rows and cols must be positive", shape.str()));
    const auto type = onednn_float_type(shape.dtype);
    auto desc = plain_desc({shape.rows, shape.cols}, type, dnnl::memory::format_tag::ab);
    auto dst_desc = desc;
    const auto prop = dnnl::prop_kind::forward_inference;
    if (is_reorder(shape.op)) {
      if (shape.rows % block_ != 0)
        throw InputError(fmt::format("vector op {}: a reorder's rows (channels) must be a multiple of {}",
                                     shape.str(), block_));
      // One image of `rows` channels, one row of `cols` positions.
      const dnnl::memory::dims dims = {1, shape.rows, 1, shape.cols};
      const auto plain = plain_desc(dims, type, dnnl::memory::format_tag::abcd);
      const auto blocked = plain_desc(dims, type, blocked_tag());
      const bool to_blocked = shape.op == "reorder_blocked";
      desc = to_blocked ? plain : blocked;
      dst_desc = to_blocked ? blocked : plain;
      const auto pd = TRUEPEAK_DNNL(
          dnnl::reorder::primitive_desc(context_.engine, desc, context_.engine, dst_desc));
      impl_ = pd.impl_info_str();
      primitive_ = TRUEPEAK_DNNL(dnnl::reorder(pd));
    } else if (is_add(shape.op)) {
      if (shape.op == "add_padded") {
        if (shape.rows % block_ == 0)
          throw InputError(fmt::format(
              "vector op {}: add_padded's rows (channels) must leave the last block of {} part-filled",
              shape.str(), block_));
        desc = plain_desc({1, shape.rows, 1, shape.cols}, type, blocked_tag());
        dst_desc = desc;
      }
      const std::vector<float> scales = {1.0f, 1.0f};
      const auto pd = TRUEPEAK_DNNL(
          dnnl::sum::primitive_desc(desc, scales, {desc, desc}, context_.engine));
      impl_ = pd.impl_info_str();
      primitive_ = TRUEPEAK_DNNL(dnnl::sum(pd));
      addend_ = TRUEPEAK_DNNL(dnnl::memory(desc, context_.engine));
      fill_memory(addend_, 0x60);
      zero_padding(addend_);
      args_[DNNL_ARG_MULTIPLE_SRC + 1] = addend_;
    } else if (shape.op == "softmax") {
      const auto op = TRUEPEAK_DNNL(dnnl::softmax_forward::desc(prop, desc, 1));
      const auto pd = TRUEPEAK_DNNL(dnnl::softmax_forward::primitive_desc(op, context_.engine));
      impl_ = pd.impl_info_str();
      primitive_ = TRUEPEAK_DNNL(dnnl::softmax_forward(pd));
    } else if (shape.op == "layernorm") {
      const auto op = TRUEPEAK_DNNL(dnnl::layer_normalization_forward::desc(
          prop, desc, kLayerNormEpsilon, dnnl::normalization_flags::none));
      const auto pd =
          TRUEPEAK_DNNL(dnnl::layer_normalization_forward::primitive_desc(op, context_.engine));
      impl_ = pd.impl_info_str();
      primitive_ = TRUEPEAK_DNNL(dnnl::layer_normalization_forward(pd));
      // Inference computes the statistics itself; memories only where the primitive asks.
      for (const int arg : {DNNL_ARG_MEAN, DNNL_ARG_VARIANCE}) {
        const auto md = pd.query_md(dnnl::query::exec_arg_md, arg);
        if (md.get_size() > 0) args_[arg] = TRUEPEAK_DNNL(dnnl::memory(md, context_.engine));
      }
    } else {
      const auto e = eltwise_algorithm(shape.op);
      const auto op =
          TRUEPEAK_DNNL(dnnl::eltwise_forward::desc(prop, e.algorithm, desc, e.alpha, e.beta));
      const auto pd = TRUEPEAK_DNNL(dnnl::eltwise_forward::primitive_desc(op, context_.engine));
      impl_ = pd.impl_info_str();
      primitive_ = TRUEPEAK_DNNL(dnnl::eltwise_forward(pd));
    }
    src_ = TRUEPEAK_DNNL(dnnl::memory(desc, context_.engine));
    dst_ = TRUEPEAK_DNNL(dnnl::memory(dst_desc, context_.engine));
    fill_memory(src_, 0x5e);
    zero_padding(src_);
    spread_inputs();
    fill_memory(dst_, 0x5f);
    args_[is_add(shape.op) ? DNNL_ARG_MULTIPLE_SRC : DNNL_ARG_SRC] = src_;
    args_[DNNL_ARG_DST] = dst_;
  }

  std::string name() const override { return "vector_op " + shape_.str(); }
  double flops() const override { return 0; }
  double bytes() const override { return shape_.bytes(); }
  std::string impl() const override { return impl_; }
  std::string layout() const override {
    const std::string blocked = fmt::format("aBcd{}b", block_);
    if (shape_.op == "reorder_blocked") return "abcd->" + blocked;
    if (shape_.op == "reorder_plain") return blocked + "->abcd";
    if (shape_.op == "add_padded") return blocked;
    return "row-major";
  }

  // Every element of a spread of rows against a double-precision reference computed from the
  // same (rounded) inputs: f32 to 1e-4 relative, bf16 to its output rounding.
  void check() override {
    run_s();
    if (is_reorder(shape_.op)) {
      check_reorder();
      return;
    }
    const bool bf16 = shape_.dtype == DType::bf16;
    const double rel = bf16 ? 1.6e-2 : 1e-4, abs = bf16 ? 1e-4 : 1e-6;
    const std::int64_t step = std::max<std::int64_t>(1, shape_.rows / 32);
    const bool blocked = shape_.op == "add_padded";
    std::vector<double> x(static_cast<std::size_t>(shape_.cols)), y(x.size()), ref(x.size());
    for (std::int64_t row = 0; row < shape_.rows; row += step) {
      for (std::int64_t c = 0; c < shape_.cols; ++c) {
        x[c] = value(src_, offset(blocked, row, c));
        if (addend_) y[c] = value(addend_, offset(blocked, row, c));
      }
      reference_row(x, y, ref);
      for (std::int64_t c = 0; c < shape_.cols; ++c) {
        const double got = value(dst_, offset(blocked, row, c));
        if (!(std::abs(got - ref[c]) <= rel * std::abs(ref[c]) + abs)) {
          throw CheckFailed(fmt::format("{}: element ({}, {}) is {}, expected {} (input {})", name(),
                                        row, c, got, ref[c], x[c]));
        }
      }
    }
    // The sum of zero padding is zero padding (the output's was random before the first run).
    if (blocked) {
      for (std::int64_t c = shape_.rows; c < padded_rows(); ++c)
        for (std::int64_t p = 0; p < shape_.cols; ++p)
          if (value(dst_, offset(true, c, p)) != 0.0)
            throw CheckFailed(fmt::format("{}: padding channel {} position {} is {}, expected 0", name(), c,
                                          p, value(dst_, offset(true, c, p))));
    }
  }

  double run_s() override { return timed_execute_s(context_, primitive_, args_); }

 private:
  // Inputs over [-8, 8) rather than [-1, 1): relu6 clips at 6, and exp, tanh, sigmoid, silu and
  // gelu reach their saturating tails, so a wrong op or clip bound fails the check. Scaling by a
  // power of two is exact in bf16 too.
  void spread_inputs() {
    void* data = src_.get_data_handle();
    const std::size_t n = src_.get_desc().get_size() / (shape_.dtype == DType::bf16 ? 2 : 4);
    if (shape_.dtype == DType::bf16) {
      auto* p = static_cast<std::uint16_t*>(data);
      for (std::size_t i = 0; i < n; ++i) p[i] = f32_to_bf16(8.0f * bf16_to_f32(p[i]));
    } else {
      auto* p = static_cast<float*>(data);
      for (std::size_t i = 0; i < n; ++i) p[i] *= 8.0f;
    }
  }

  // The channels past `rows` in the last block of a blocked operand are zero, as in the tensors of
  // a framework that keeps them blocked.
  void zero_padding(const dnnl::memory& memory) const {
    if (shape_.op != "add_padded") return;
    void* data = memory.get_data_handle();
    for (std::int64_t c = shape_.rows; c < padded_rows(); ++c)
      for (std::int64_t p = 0; p < shape_.cols; ++p) {
        const auto i = offset(true, c, p);
        if (shape_.dtype == DType::bf16)
          static_cast<std::uint16_t*>(data)[i] = 0;
        else
          static_cast<float*>(data)[i] = 0.0f;
      }
  }

  // The channels of a blocked tensor of `rows` channels, its last block filled up.
  std::int64_t padded_rows() const { return (shape_.rows + block_ - 1) / block_ * block_; }

  dnnl::memory::format_tag blocked_tag() const {
    return block_ == 16 ? dnnl::memory::format_tag::aBcd16b : dnnl::memory::format_tag::aBcd8b;
  }

  // Offset of channel `c` at position `p` in a tensor of this op's shape, plain or blocked.
  std::int64_t offset(bool blocked, std::int64_t c, std::int64_t p) const {
    if (!blocked) return c * shape_.cols + p;
    return (c / block_) * shape_.cols * block_ + p * block_ + c % block_;
  }

  // A layout change moves every element unchanged: each one is compared exactly.
  void check_reorder() const {
    const bool to_blocked = shape_.op == "reorder_blocked";
    for (std::int64_t c = 0; c < shape_.rows; ++c) {
      for (std::int64_t p = 0; p < shape_.cols; ++p) {
        const double want = value(src_, offset(!to_blocked, c, p));
        const double got = value(dst_, offset(to_blocked, c, p));
        if (got != want)
          throw CheckFailed(fmt::format("{}: channel {} position {} is {}, expected {}", name(), c, p,
                                        got, want));
      }
    }
  }

  double value(const dnnl::memory& memory, std::int64_t index) const {
    const void* data = memory.get_data_handle();
    if (shape_.dtype == DType::bf16) return bf16_to_f32(static_cast<const std::uint16_t*>(data)[index]);
    return static_cast<const float*>(data)[index];
  }

  // `y`: the second operand of add.
  void reference_row(const std::vector<double>& x, const std::vector<double>& y,
                     std::vector<double>& out) const {
    const auto n = static_cast<double>(x.size());
    if (is_add(shape_.op)) {
      for (std::size_t i = 0; i < x.size(); ++i) out[i] = x[i] + y[i];
    } else if (shape_.op == "softmax") {
      const double top = *std::max_element(x.begin(), x.end());
      double sum = 0;
      for (std::size_t i = 0; i < x.size(); ++i) sum += out[i] = std::exp(x[i] - top);
      for (auto& v : out) v /= sum;
    } else if (shape_.op == "layernorm") {
      double mean = 0, var = 0;
      for (const double v : x) mean += v;
      mean /= n;
      for (const double v : x) var += (v - mean) * (v - mean);
      const double scale = 1.0 / std::sqrt(var / n + kLayerNormEpsilon);
      for (std::size_t i = 0; i < x.size(); ++i) out[i] = (x[i] - mean) * scale;
    } else {
      for (std::size_t i = 0; i < x.size(); ++i) out[i] = reference_eltwise(shape_.op, x[i]);
    }
  }

  OnednnContext context_;
  VectorOpShape shape_;
  std::int64_t block_;  // channels a block of the blocked tensors
  std::string impl_;
  dnnl::primitive primitive_;
  dnnl::memory src_, dst_;
  dnnl::memory addend_;  // add's second operand
  std::unordered_map<int, dnnl::memory> args_;
};

}  // namespace

std::unique_ptr<Kernel> make_vector_op_kernel(const OnednnContext& context,
                                              const VectorOpShape& shape) {
  const auto& names = vector_op_names();
  if (std::find(names.begin(), names.end(), shape.op) == names.end())
    throw Unsupported(fmt::format("vector op '{}' is not an op of the CPU backend", shape.op));
  try {
    return std::make_unique<VectorOpKernel>(context, shape);
  } catch (const Unsupported& e) {
    throw Unsupported(
        fmt::format("vector_op {}: oneDNN {} has no implementation for it on this CPU (ISA {}): {}",
                    shape.str(), onednn_version(), onednn_effective_isa(), e.what()));
  }
}

}  // namespace truepeak::cpu
