// GEMM through oneDNN matmul (v2 API: matmul::desc, then primitive_desc).
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "kernels/cpu/dnnl_check.hpp"
#include "kernels/cpu/onednn_kernels.hpp"
#include "kernels/cpu/reference_check.hpp"
#include "kernels/cpu/weight_copies.hpp"

namespace truepeak::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct GemmTypes {
  dt a, b, c;
};

GemmTypes gemm_types(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return {dt::f32, dt::f32, dt::f32};
    case DType::bf16:
      return {dt::bf16, dt::bf16, dt::bf16};
    case DType::int8:
      return {dt::s8, dt::s8, dt::s32};
    default:
      throw Unsupported(
          fmt::format("gemm {}: the CPU backend measures f32, bf16 and int8 GEMM through oneDNN",
                      to_string(dtype)));
  }
}

class GemmKernel final : public Kernel {
 public:
  GemmKernel(const OnednnContext& context, const GemmShape& shape, std::int64_t weight_span_bytes)
      : context_(context), shape_(shape) {
    if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.batch <= 0) {
      throw Error(fmt::format("gemm {}: dimensions must be positive", shape.str()));
    }
    const auto types = gemm_types(shape.dtype);
    const bool batched = shape.batch > 1;
    const auto dims = [&](std::int64_t rows, std::int64_t cols) {
      return batched ? dnnl::memory::dims{shape.batch, rows, cols} : dnnl::memory::dims{rows, cols};
    };
    const tag row_major = batched ? tag::abc : tag::ab;
    // B (k x n) stored as the weights of a linear layer, W[n][k]: oneDNN's "ba" (batched "acb").
    const tag linear_weights = batched ? tag::acb : tag::ba;
    const auto a_desc = plain_desc(dims(shape.m, shape.k), types.a, row_major);
    const auto b_plain = plain_desc(dims(shape.k, shape.n), types.b, linear_weights);
    const auto c_desc = plain_desc(dims(shape.m, shape.n), types.c, row_major);

    // The operands as an eager framework hands them to oneDNN: activations and output row-major,
    // the weights as PyTorch's Linear stores them, W[n][k] (ONEDNN_VERBOSE: wei ba), the same
    // product as the GPU backend's "TN" GEMM. The library packs the weights inside each call, and
    // that cost is part of what such a runtime delivers; for a small M (decode) it is most of
    // the time.
    const auto desc = TRUEPEAK_DNNL(dnnl::matmul::desc(a_desc, b_plain, c_desc));
    pd_ = TRUEPEAK_DNNL(dnnl::matmul::primitive_desc(desc, context_.engine));
    primitive_ = TRUEPEAK_DNNL(dnnl::matmul(pd_));
    impl_ = pd_.impl_info_str();

    a_ = TRUEPEAK_DNNL(dnnl::memory(a_desc, context_.engine));
    b_plain_ = TRUEPEAK_DNNL(dnnl::memory(b_plain, context_.engine));
    c_ = TRUEPEAK_DNNL(dnnl::memory(c_desc, context_.engine));
    fill_memory(a_, 0x6a);
    fill_memory(b_plain_, 0x6b);
    b_ = reorder_to(context_, b_plain_, pd_.weights_desc());
    layout_ = pd_.weights_desc() == b_plain ? "row-major, weights [n][k]"
                                            : "row-major, blocked weights";
    args_ = {{DNNL_ARG_SRC, a_}, {DNNL_ARG_WEIGHTS, b_}, {DNNL_ARG_DST, c_}};

    weights_ = WeightCopies(context_, b_, weight_span_bytes);
    if (weights_.cold()) layout_ += ", cold weights";
  }

  std::string name() const override { return "gemm " + shape_.str(); }
  double flops() const override { return shape_.flops(); }
  double bytes() const override { return shape_.bytes(); }
  std::string impl() const override { return impl_; }
  std::string layout() const override { return layout_; }

  // Checks the product with the last copy of the weights (the original when there is one).
  void check() override {
    weights_.next_is_last();
    run_s();
    check_gemm(shape_, a_.get_data_handle(), b_plain_.get_data_handle(), c_.get_data_handle());
  }

  double run_s() override {
    args_[DNNL_ARG_WEIGHTS] = weights_.next();
    return timed_execute_s(context_, primitive_, args_);
  }

 private:
  OnednnContext context_;
  GemmShape shape_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul primitive_;
  dnnl::memory a_, b_plain_, b_, c_;
  WeightCopies weights_;  // b_, and its copies when cold
  std::unordered_map<int, dnnl::memory> args_;
  std::string impl_, layout_;
};

}  // namespace

std::unique_ptr<Kernel> make_gemm_kernel(const OnednnContext& context, const GemmShape& shape,
                                         std::int64_t weight_span_bytes) {
  gemm_types(shape.dtype);  // says itself which dtypes are measured
  try {
    return std::make_unique<GemmKernel>(context, shape, weight_span_bytes);
  } catch (const Unsupported& e) {
    throw Unsupported(
        fmt::format("gemm {}: oneDNN {} has no matmul implementation for it on "
                    "this CPU (ISA {}): {}",
                    shape.str(), onednn_version(), onednn_effective_isa(), e.what()));
  }
}

}  // namespace truepeak::cpu
