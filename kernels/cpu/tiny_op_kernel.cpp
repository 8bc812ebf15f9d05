// The smallest real oneDNN primitive: ReLU over 64 floats. Its time is almost all fixed cost
// (argument handling, dispatch, the OpenMP fork/join), which dominates small layers.
#include <fmt/format.h>

#include <unordered_map>

#include "core/error.hpp"
#include "kernels/cpu/dnnl_check.hpp"
#include "kernels/cpu/onednn_kernels.hpp"

namespace truepeak::cpu {
namespace {

constexpr std::int64_t kElements = 64;

class TinyOpKernel final : public Kernel {
 public:
  explicit TinyOpKernel(const OnednnContext& context) : context_(context) {
    const auto desc =
        plain_desc({kElements}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
    const auto op = TRUEPEAK_DNNL(dnnl::eltwise_forward::desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_relu, desc, 0.0f, 0.0f));
    pd_ = TRUEPEAK_DNNL(dnnl::eltwise_forward::primitive_desc(op, context_.engine));
    primitive_ = TRUEPEAK_DNNL(dnnl::eltwise_forward(pd_));
    src_ = TRUEPEAK_DNNL(dnnl::memory(desc, context_.engine));
    dst_ = TRUEPEAK_DNNL(dnnl::memory(desc, context_.engine));
    fill_memory(src_, 0x71);
    args_ = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}};
  }

  std::string name() const override {
    return fmt::format("tiny_op eltwise_relu f32 {}", kElements);
  }
  double flops() const override { return 0; }
  double bytes() const override { return 2.0 * kElements * sizeof(float); }
  std::string impl() const override { return pd_.impl_info_str(); }

  void check() override {
    run_s();
    const auto* src = static_cast<const float*>(src_.get_data_handle());
    const auto* dst = static_cast<const float*>(dst_.get_data_handle());
    for (std::int64_t i = 0; i < kElements; ++i) {
      const float expected = src[i] > 0 ? src[i] : 0.0f;
      if (dst[i] != expected) {
        throw CheckFailed(
            fmt::format("{}: element {} is {}, expected {}", name(), i, dst[i], expected));
      }
    }
  }

  double run_s() override { return timed_execute_s(context_, primitive_, args_); }

 private:
  OnednnContext context_;
  dnnl::eltwise_forward::primitive_desc pd_;
  dnnl::eltwise_forward primitive_;
  dnnl::memory src_, dst_;
  std::unordered_map<int, dnnl::memory> args_;
};

}  // namespace

std::unique_ptr<Kernel> make_tiny_op_kernel(const OnednnContext& context) {
  return std::make_unique<TinyOpKernel>(context);
}

}  // namespace truepeak::cpu
