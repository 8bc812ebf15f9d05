// Kernels over oneDNN primitives (built only with TRUEPEAK_ENABLE_ONEDNN). Each holds its engine
// and stream handles (oneDNN handles are reference counted) and its primitive, memories and
// reordered weights, all prepared before timing.
#pragma once

#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "core/backend.hpp"

namespace truepeak::cpu {

struct OnednnContext {
  dnnl::engine engine;
  dnnl::stream stream;
};

OnednnContext make_onednn_context();

// matmul: f32 (f32 out), bf16 (bf16 out, f32 accumulation), int8 (s8 x s8 -> s32); batch > 1 is
// a 3-D batched matmul. Operands row-major, as eager frameworks pass them (oneDNN packs the
// weights inside each call).
// `weight_span_bytes` > 0: cold weights, B copied until the copies span that many bytes (at most
// 4096 copies) and one copy used per call in turn.
std::unique_ptr<Kernel> make_gemm_kernel(const OnednnContext& context, const GemmShape& shape,
                                         std::int64_t weight_span_bytes = 0);
// Forward-inference direct convolution, f32 or bf16, in the given activation layout ("any" lets
// oneDNN choose, normally its blocked formats); weights always in oneDNN's preferred layout.
// `weight_span_bytes` > 0: cold weights, as for make_gemm_kernel.
std::unique_ptr<Kernel> make_conv_kernel(const OnednnContext& context, const ConvShape& shape,
                                         ConvLayout layout, std::int64_t weight_span_bytes = 0);
// ReLU over a handful of floats: the time of the smallest real primitive is the per-op overhead.
std::unique_ptr<Kernel> make_tiny_op_kernel(const OnednnContext& context);

// An elementwise, softmax or layer-norm op over a row-major rows x cols tensor, f32 or bf16,
// checked against a double-precision reference on a spread of rows.
std::unique_ptr<Kernel> make_vector_op_kernel(const OnednnContext& context,
                                              const VectorOpShape& shape);

// "2.6.3"
std::string onednn_version();
// The ISA oneDNN dispatches to on this machine, e.g. "avx512_core_bf16".
std::string onednn_effective_isa();

// A primitive's memory descriptor for a plain layout of the given tag.
dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims, dnnl::memory::data_type type,
                              dnnl::memory::format_tag tag);
// oneDNN data type of a truepeak dtype for the floating types it measures (f32, bf16).
dnnl::memory::data_type onednn_float_type(DType dtype);
// Copies `from` into a new memory of `to` (the primitive's layout), or returns `from` if equal.
dnnl::memory reorder_to(const OnednnContext& context, const dnnl::memory& from,
                        const dnnl::memory::desc& to);
// Runs the primitive once and waits for it; the seconds between submission and completion.
double timed_execute_s(OnednnContext& context, const dnnl::primitive& primitive,
                       const std::unordered_map<int, dnnl::memory>& args);
// Fills a plain memory with random values of its data type (f32, bf16, s8).
void fill_memory(const dnnl::memory& memory, std::uint64_t seed);

}  // namespace truepeak::cpu
