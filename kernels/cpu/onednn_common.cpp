#include <fmt/format.h>

#include <chrono>

#include "core/error.hpp"
#include "kernels/cpu/dnnl_check.hpp"
#include "kernels/cpu/onednn_kernels.hpp"
#include "kernels/cpu/random_fill.hpp"

namespace truepeak::cpu {

using dt = dnnl::memory::data_type;

OnednnContext make_onednn_context() {
  OnednnContext context;
  context.engine = TRUEPEAK_DNNL(dnnl::engine(dnnl::engine::kind::cpu, 0));
  context.stream = TRUEPEAK_DNNL(dnnl::stream(context.engine));
  return context;
}

std::string onednn_version() {
  const dnnl_version_t* version = dnnl_version();
  return fmt::format("{}.{}.{}", version->major, version->minor, version->patch);
}

std::string onednn_effective_isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::all:
      return "all";
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
  }
  return fmt::format("0x{:x}", static_cast<unsigned>(dnnl_get_effective_cpu_isa()));
}

dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims, dt type,
                              dnnl::memory::format_tag tag) {
  return TRUEPEAK_DNNL(dnnl::memory::desc(dims, type, tag));
}

dt onednn_float_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return dt::f32;
    case DType::bf16:
      return dt::bf16;
    default:
      throw Unsupported(fmt::format(
          "{} is not measured through oneDNN by the CPU backend (it measures f32, bf16 and int8 "
          "GEMM, f32 and bf16 convolution)",
          to_string(dtype)));
  }
}

dnnl::memory reorder_to(const OnednnContext& context, const dnnl::memory& from,
                        const dnnl::memory::desc& to) {
  if (from.get_desc() == to) {
    return from;
  }
  dnnl::memory result = TRUEPEAK_DNNL(dnnl::memory(to, context.engine));
  dnnl::memory source = from;  // a handle copy: execute() wants non-const handles
  auto reorder = TRUEPEAK_DNNL(dnnl::reorder(source, result));
  dnnl::stream stream = context.stream;  // a handle copy: wait() is not const
  TRUEPEAK_DNNL(reorder.execute(stream, source, result));
  TRUEPEAK_DNNL(stream.wait());
  return result;
}

void fill_memory(const dnnl::memory& memory, std::uint64_t seed) {
  const auto desc = memory.get_desc();
  void* handle = memory.get_data_handle();
  const std::size_t bytes = desc.get_size();
  switch (desc.data_type()) {
    case dt::f32:
      fill_random({static_cast<float*>(handle), bytes / sizeof(float)}, seed);
      break;
    case dt::bf16:
      fill_random_bf16({static_cast<std::uint16_t*>(handle), bytes / sizeof(std::uint16_t)}, seed);
      break;
    case dt::s8:
      fill_random_s8({static_cast<std::int8_t*>(handle), bytes}, seed);
      break;
    default:
      throw Error("fill_memory: unexpected oneDNN data type");
  }
}

double timed_execute_s(OnednnContext& context, const dnnl::primitive& primitive,
                       const std::unordered_map<int, dnnl::memory>& args) {
  const auto start = std::chrono::steady_clock::now();
  TRUEPEAK_DNNL(primitive.execute(context.stream, args));
  TRUEPEAK_DNNL(context.stream.wait());
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(stop - start).count();
}

}  // namespace truepeak::cpu
