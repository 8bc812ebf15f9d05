// The CPU backend: describes the CPU from /proc and /sys, runs GEMM/convolution through oneDNN
// (when built with it) and its own OpenMP STREAM and FMA kernels.
#include "kernels/cpu/cpu_backend.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>

#include "core/error.hpp"
#include "kernels/cpu/clock.hpp"
#include "kernels/cpu/cpu_info.hpp"
#include "kernels/cpu/own_kernels.hpp"
#include "kernels/cpu/stream_loops.hpp"
#ifdef TRUEPEAK_HAVE_ONEDNN
#include "kernels/cpu/onednn_kernels.hpp"
#endif

namespace truepeak {
namespace {

// ISA flags (as /proc/cpuinfo names them) that decide which kernels and peaks apply.
constexpr const char* kIsaFlags[] = {"avx2",     "fma",         "avx512f",     "avx512bw",
                                     "avx512vl", "avx512_bf16", "avx512_fp16", "avx512_vnni",
                                     "avx_vnni", "amx_tile",    "amx_bf16",    "amx_int8"};

// Cold weights: copies spanning this many times the last-level cache, at most kColdSpanMax
// (but never under twice the cache). A span of twice the cache still leaves some of a layer's
// weights there for its next call: on a Zen 5 VM with a 32 MiB L3, bf16 layers of 8 rows took
// 3-8% longer with the copies spanning 8x the cache than 2x (4x was within 1-2% of 8x), as they
// do inside a model of 100-250 MB of weights. The cap keeps a host that reports a socket's
// L3 of hundreds of MiB from filling gigabytes a point.
constexpr std::int64_t kColdSpanCaches = 8;
constexpr std::int64_t kColdSpanMax = std::int64_t{1} << 30;

std::int64_t cold_span_bytes(std::int64_t llc_bytes) {
  return std::max(2 * llc_bytes, std::min(kColdSpanCaches * llc_bytes, kColdSpanMax));
}

DeviceDescription describe_cpu(const cpu::CpuInfo& info, int threads) {
  DeviceDescription d;
  d.id = "cpu";
  d.kind = "cpu";
  d.name = info.model_name.empty() ? "unknown CPU" : info.model_name;
  d.memory_bytes = info.memory_bytes;

  auto& p = d.properties;
  nlohmann::json isa = nlohmann::json::object();
  for (const char* flag : kIsaFlags) {
    isa[flag] = info.flags.count(flag) > 0;
  }
  p["isa"] = isa;
  p["cores"] = info.physical_cores;
  p["logical_cpus"] = info.logical_cpus;
  p["threads"] = threads;
  p["vendor"] = info.vendor;
  p["family"] = info.family ? nlohmann::json(*info.family) : nlohmann::json();
  p["model"] = info.model ? nlohmann::json(*info.model) : nlohmann::json();
  p["frequency_mhz"] = info.cpuinfo_mhz ? nlohmann::json(*info.cpuinfo_mhz) : nlohmann::json();
  p["max_frequency_mhz"] = info.max_mhz ? nlohmann::json(*info.max_mhz) : nlohmann::json();
  p["frequency_source"] =
      std::string(
          "frequency_mhz: 'cpu MHz' in /proc/cpuinfo (current clock; a VM shows its "
          "nominal clock); max_frequency_mhz: ") +
      (info.max_mhz ? "/sys/devices/system/cpu/cpu*/cpufreq/cpuinfo_max_freq"
                    : "not readable here (no cpufreq)") +
      "; measured_frequency_mhz (written by a calibration): its clock point, a dependent integer "
      "add chain timed on every thread at once, the fastest sample";
  nlohmann::json caches = nlohmann::json::array();
  for (const auto& cache : info.caches) {
    caches.push_back({{"level", cache.level},
                      {"type", cache.type},
                      {"bytes", cache.bytes},
                      {"shared_cpu_list", cache.shared_cpu_list},
                      {"instances_used", cache.instances_used}});
  }
  p["caches"] = caches;

  // Capacity available to all threads used together: one instance per distinct cache they span.
  for (int level = 1; level <= 3; ++level) {
    for (const auto& cache : info.caches) {
      if (cache.level == level && cache.type != "Instruction") {
        d.levels.push_back({fmt::format("L{}", level), cache.bytes * cache.instances_used});
        break;
      }
    }
  }
  d.levels.push_back({"DRAM", info.memory_bytes});
  return d;
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options) {
    const auto probe = cpu::read_cpu_info(0);
    const int all_cores = std::max(1, probe.physical_cores);
    threads_ = options.threads > 0 ? options.threads : all_cores;
    const auto info = options.threads > 0 ? cpu::read_cpu_info(threads_) : probe;
    description_ = describe_cpu(info, threads_);
    // The only place the oneDNN thread count can be set with its OpenMP runtime is the
    // process-wide OpenMP default; our own kernels name their thread count explicitly.
    omp_set_num_threads(threads_);
    llc_bytes_ = largest_cache_bytes(description_.levels);
    streaming_stores_ = llc_bytes_ > 0 && cpu::stream_nt_available();
#ifdef TRUEPEAK_HAVE_ONEDNN
    onednn_ = cpu::make_onednn_context();
    description_.libraries["onednn"] = cpu::onednn_version();
    description_.properties["onednn_isa"] = cpu::onednn_effective_isa();
#else
    description_.properties["onednn_isa"] = nullptr;
#endif
    description_.properties["fma_kernel_isa"] = cpu::best_fma_variant().isa;
    // How the main-memory triads store (the working sets past twice the last-level cache):
    // streaming stores read no line first, regular ones do, inside the figure.
    description_.properties["main_memory_stores"] = streaming_stores_ ? "streaming" : "regular";
  }

  const DeviceDescription& describe() const override { return description_; }

  std::unique_ptr<Kernel> gemm(const GemmShape& shape) override {
#ifdef TRUEPEAK_HAVE_ONEDNN
    return cpu::make_gemm_kernel(onednn_, shape);
#else
    throw Unsupported(
        fmt::format("gemm {}: truepeak was built without oneDNN "
                    "(install libdnnl-dev and configure with TRUEPEAK_ENABLE_ONEDNN=ON)",
                    shape.str()));
#endif
  }

  std::unique_ptr<Kernel> gemm_cold_weights(const GemmShape& shape) override {
#ifdef TRUEPEAK_HAVE_ONEDNN
    // Copies of the weights spanning several times the largest cache (cold_span_bytes): each
    // call's are long evicted.
    if (llc_bytes_ <= 0)
      throw Unsupported("gemm " + shape.str() +
                        " with cold weights: the cache sizes of this CPU are unknown");
    return cpu::make_gemm_kernel(onednn_, shape, cold_span_bytes(llc_bytes_));
#else
    return gemm(shape);
#endif
  }

  std::unique_ptr<Kernel> conv_cold_weights(const ConvShape& shape, ConvLayout layout) override {
#ifdef TRUEPEAK_HAVE_ONEDNN
    if (llc_bytes_ <= 0)
      throw Unsupported("conv " + shape.str() +
                        " with cold weights: the cache sizes of this CPU are unknown");
    return cpu::make_conv_kernel(onednn_, shape, layout, cold_span_bytes(llc_bytes_));
#else
    return conv(shape, layout);
#endif
  }

  std::unique_ptr<Kernel> conv(const ConvShape& shape, ConvLayout layout) override {
#ifdef TRUEPEAK_HAVE_ONEDNN
    return cpu::make_conv_kernel(onednn_, shape, layout);
#else
    (void)layout;
    throw Unsupported(
        fmt::format("conv {}: truepeak was built without oneDNN "
                    "(install libdnnl-dev and configure with TRUEPEAK_ENABLE_ONEDNN=ON)",
                    shape.str()));
#endif
  }

  std::unique_ptr<Kernel> stream(StreamOp op, std::int64_t bytes) override {
    cpu::StreamOptions options;
    options.threads = threads_;
    // Non-temporal stores only where the working set is far beyond the last-level cache: there
    // they save the read-for-ownership of the destination; in cache they would evict it.
    options.non_temporal = streaming_stores_ && bytes >= 2 * llc_bytes_;
    return cpu::make_stream_kernel(op, bytes, options);
  }

  std::unique_ptr<Kernel> fma(DType dtype) override {
    return cpu::make_fma_kernel(dtype, threads_);
  }

  std::unique_ptr<Kernel> clock() override { return cpu::make_clock_kernel(threads_); }

  std::unique_ptr<Kernel> tiny_op() override {
#ifdef TRUEPEAK_HAVE_ONEDNN
    return cpu::make_tiny_op_kernel(onednn_);
#else
    throw Unsupported(
        "tiny_op: truepeak was built without oneDNN, whose per-op overhead it measures");
#endif
  }

  std::unique_ptr<Kernel> vector_op(const VectorOpShape& shape) override {
#ifdef TRUEPEAK_HAVE_ONEDNN
    return cpu::make_vector_op_kernel(onednn_, shape);
#else
    throw Unsupported("vector_op " + shape.str() +
                      ": truepeak was built without oneDNN, whose elementwise ops it measures");
#endif
  }

  // A small f32 GEMM (384^3, about 0.3 ms): it leans on the caches and load ports as well as the
  // FMA units, so it also slows when another tenant's work competes for the core's caches,
  // which a register-only FMA loop does not notice. Without oneDNN, the FMA loop.
  std::unique_ptr<Kernel> sentinel() override {
#ifdef TRUEPEAK_HAVE_ONEDNN
    return cpu::make_gemm_kernel(onednn_, GemmShape{DType::f32, 384, 384, 384, 1});
#else
    return cpu::make_sentinel_kernel(threads_);
#endif
  }

 private:
  DeviceDescription description_;
  int threads_ = 1;
  std::int64_t llc_bytes_ = 0;
  // The main-memory triads (past twice the last-level cache) use streaming stores.
  bool streaming_stores_ = false;
#ifdef TRUEPEAK_HAVE_ONEDNN
  cpu::OnednnContext onednn_;
#endif
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace truepeak
