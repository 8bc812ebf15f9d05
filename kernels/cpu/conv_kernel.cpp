// Convolution through oneDNN (v2 API), forward inference, direct algorithm.
#include <fmt/format.h>

#include <unordered_map>

#include "core/error.hpp"
#include "kernels/cpu/dnnl_check.hpp"
#include "kernels/cpu/onednn_kernels.hpp"
#include "kernels/cpu/reference_check.hpp"
#include "kernels/cpu/weight_copies.hpp"

namespace truepeak::cpu {
namespace {

using tag = dnnl::memory::format_tag;

class ConvKernel final : public Kernel {
 public:
  ConvKernel(const OnednnContext& context, const ConvShape& shape, ConvLayout layout,
             std::int64_t weight_span_bytes)
      : context_(context), shape_(shape) {
    if (shape.groups <= 0 || shape.c % shape.groups != 0 || shape.k % shape.groups != 0) {
      throw Error(fmt::format("conv {}: channels must divide into groups", shape.str()));
    }
    if (shape.out_h() <= 0 || shape.out_w() <= 0) {
      throw Error(fmt::format("conv {}: the output is empty", shape.str()));
    }
    const auto type = onednn_float_type(shape.dtype);
    const dnnl::memory::dims src_dims{shape.n, shape.c, shape.h, shape.w};
    const dnnl::memory::dims dst_dims{shape.n, shape.k, shape.out_h(), shape.out_w()};
    const bool grouped = shape.groups > 1;
    const dnnl::memory::dims weight_dims =
        grouped ? dnnl::memory::dims{shape.groups, shape.k / shape.groups, shape.c / shape.groups,
                                     shape.r, shape.s}
                : dnnl::memory::dims{shape.k, shape.c, shape.r, shape.s};
    // Blocked: channel blocks as wide as a vector register; a channel count past one block that
    // does not fill whole blocks is padded to them (24 channels take two blocks of 16), as
    // frameworks that keep activations in oneDNN's formats store it. Fewer channels than a block
    // (an RGB image) stay plain, as an image arrives from outside the network.
    const std::int64_t block = onednn_effective_isa().rfind("avx512", 0) == 0 ? 16 : 8;
    const tag block_tag = block == 16 ? tag::nChw16c : tag::nChw8c;
    const auto layout_tag = [&](std::int64_t channels) {
      switch (layout) {
        case ConvLayout::nchw:
          return tag::nchw;
        case ConvLayout::nhwc:
          return tag::nhwc;
        case ConvLayout::blocked:
          return channels >= block ? block_tag : tag::nchw;
        case ConvLayout::any:
          break;
      }
      return tag::any;
    };

    const auto desc = TRUEPEAK_DNNL(dnnl::convolution_forward::desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        plain_desc(src_dims, type, layout_tag(shape.c)), plain_desc(weight_dims, type, tag::any),
        plain_desc(dst_dims, type, layout_tag(shape.k)), {shape.stride, shape.stride},
        // oneDNN counts dilation from 0 (0 = dense); truepeak from 1.
        {shape.dilation - 1, shape.dilation - 1}, {shape.pad, shape.pad}, {shape.pad, shape.pad}));
    pd_ = TRUEPEAK_DNNL(dnnl::convolution_forward::primitive_desc(desc, context_.engine));
    primitive_ = TRUEPEAK_DNNL(dnnl::convolution_forward(pd_));
    impl_ = pd_.impl_info_str();

    // Reference operands in NCHW / (G)OIHW; reordered into the primitive's layouts before timing.
    src_plain_ =
        TRUEPEAK_DNNL(dnnl::memory(plain_desc(src_dims, type, tag::nchw), context_.engine));
    weights_plain_ = TRUEPEAK_DNNL(dnnl::memory(
        plain_desc(weight_dims, type, grouped ? tag::goihw : tag::oihw), context_.engine));
    dst_plain_ =
        TRUEPEAK_DNNL(dnnl::memory(plain_desc(dst_dims, type, tag::nchw), context_.engine));
    fill_memory(src_plain_, 0xc1);
    fill_memory(weights_plain_, 0xc2);
    src_ = reorder_to(context_, src_plain_, pd_.src_desc());
    weights_ = reorder_to(context_, weights_plain_, pd_.weights_desc());
    dst_ = TRUEPEAK_DNNL(dnnl::memory(pd_.dst_desc(), context_.engine));
    args_ = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dst_}};

    // Name the layout that actually ran: with "any" oneDNN may still pick a plain one. The output
    // names it (a blocked layer may read a plain image).
    const auto& chosen = pd_.dst_desc();
    if (chosen == plain_desc(dst_dims, type, tag::nhwc)) {
      layout_ = "nhwc";
    } else if (chosen == plain_desc(dst_dims, type, tag::nchw)) {
      layout_ = "nchw";
    } else {
      layout_ = "blocked";
    }
    requested_ = std::string(to_string(layout));
    weights_copies_ = WeightCopies(context_, weights_, weight_span_bytes);
  }

  std::string name() const override {
    return fmt::format("conv {} {}{}", shape_.str(), requested_,
                       weights_copies_.cold() ? " cold weights" : "");
  }
  double flops() const override { return shape_.flops(); }
  double bytes() const override { return shape_.bytes(); }
  std::string impl() const override { return impl_; }
  std::string layout() const override { return layout_; }

  // Checks the output computed with the last copy of the weights (the original when there is one).
  void check() override {
    weights_copies_.next_is_last();
    run_s();
    dnnl::memory dst = dst_;
    dnnl::memory plain = dst_plain_;
    if (!(dst.get_desc() == plain.get_desc())) {
      auto reorder = TRUEPEAK_DNNL(dnnl::reorder(dst, plain));
      TRUEPEAK_DNNL(reorder.execute(context_.stream, dst, plain));
      TRUEPEAK_DNNL(context_.stream.wait());
    } else {
      plain = dst;
    }
    check_conv(shape_, src_plain_.get_data_handle(), weights_plain_.get_data_handle(),
               plain.get_data_handle());
  }

  double run_s() override {
    args_[DNNL_ARG_WEIGHTS] = weights_copies_.next();
    return timed_execute_s(context_, primitive_, args_);
  }

 private:
  OnednnContext context_;
  ConvShape shape_;
  dnnl::convolution_forward::primitive_desc pd_;
  dnnl::convolution_forward primitive_;
  dnnl::memory src_plain_, weights_plain_, dst_plain_, src_, weights_, dst_;
  WeightCopies weights_copies_;  // weights_, and its copies when cold
  std::unordered_map<int, dnnl::memory> args_;
  std::string impl_, layout_, requested_;
};

}  // namespace

std::unique_ptr<Kernel> make_conv_kernel(const OnednnContext& context, const ConvShape& shape,
                                         ConvLayout layout, std::int64_t weight_span_bytes) {
  onednn_float_type(shape.dtype);  // says itself which dtypes are measured
  try {
    return std::make_unique<ConvKernel>(context, shape, layout, weight_span_bytes);
  } catch (const Unsupported& e) {
    throw Unsupported(
        fmt::format("conv {}: oneDNN {} has no implementation for it on this CPU "
                    "(ISA {}): {}",
                    shape.str(), onednn_version(), onednn_effective_isa(), e.what()));
  }
}

}  // namespace truepeak::cpu
