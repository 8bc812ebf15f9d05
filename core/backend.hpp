// The one contract between the calibrate driver and a device: a Backend describes its device and
// prepares Kernels for problems; the runner times them. A backend knows nothing of profiles.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "core/shapes.hpp"

namespace truepeak {

// One prepared, allocated, timed operation. Construction does all the set-up (allocation, random
// inputs, library plan/JIT); `check()` validates the output against a reference; `run_s()` runs
// the work and returns the time of one run in seconds, timed around the work only (steady clock
// around a synchronous call on the CPU, CUDA events on a GPU). A kernel whose single run is too
// short to time may run an inner batch and return the time per run.
class Kernel {
 public:
  virtual ~Kernel() = default;
  // Canonical name of the problem, e.g. "gemm bf16_b1m64n4096k4096" or "stream triad 1GiB".
  virtual std::string name() const = 0;
  // Work of one run: FLOPs (2 x multiply-adds) and bytes moved (read + written).
  virtual double flops() const = 0;
  virtual double bytes() const = 0;
  // Throws CheckFailed when the output is wrong. Called once before any timing.
  virtual void check() = 0;
  virtual double run_s() = 0;
  // Implementation that ran, where the library says (oneDNN impl name, cuBLASLt algo id, ...).
  virtual std::string impl() const { return {}; }
  // Memory layout of the operands ("nchw", "nhwc", "blocked", "row-major, weights [n][k]",
  // "tn"); empty if not relevant.
  virtual std::string layout() const { return {}; }
};

// A cache or memory level as the backend's kernels see it: `bytes` is the capacity available to
// all threads (or SMs) together, e.g. per-core L1 x threads. The last level is device memory
// (name "DRAM" or "HBM"), whose bytes are the memory size.
struct MemoryLevel {
  std::string name;
  std::optional<std::int64_t> bytes;
};

// Whether a level of that name is device memory rather than a cache.
inline bool is_device_memory(const std::string& level_name) {
  return level_name == "DRAM" || level_name == "HBM";
}

// The largest cache's capacity (0 when the levels name none). Any list of levels with a `name`
// and optional `bytes`: a device description's, or a profile's measured ones.
template <typename Levels>
std::int64_t largest_cache_bytes(const Levels& levels) {
  std::int64_t largest = 0;
  for (const auto& level : levels)
    if (!is_device_memory(level.name) && level.bytes && *level.bytes > largest) largest = *level.bytes;
  return largest;
}

struct DeviceDescription {
  std::string id;    // "cpu", "cuda:0"
  std::string kind;  // "cpu", "gpu"
  std::string name;  // "Intel(R) Xeon(R) Platinum 8480+", "NVIDIA H200"
  nlohmann::json libraries = nlohmann::json::object();   // {"onednn": "2.6.3"}
  nlohmann::json properties = nlohmann::json::object();  // isa, threads, caches, clocks, cc, ...
  std::vector<MemoryLevel> levels;                       // innermost first
  std::optional<std::int64_t> memory_bytes;
};

// Whether a CPU device's properties say it has AVX-512 (isa.avx512f); false where they do not say.
bool cpu_has_avx512(const nlohmann::json& properties);
// Channels in a block of oneDNN's channel-blocked activation layout on a CPU device with these
// properties: from the ISA oneDNN runs there (`onednn_isa`), else from the CPU's own flags
// (cpu_has_avx512); 16 with AVX-512, else 8.
std::int64_t cpu_channel_block(const nlohmann::json& properties);

// nchw / nhwc: plain activations. blocked: channels in blocks of the vector width (oneDNN's
// nChw16c / nChw8c), as frameworks that keep activations in oneDNN's own format run them.
// any: whatever the library prefers for the shape.
enum class ConvLayout { nchw, nhwc, blocked, any };

constexpr std::string_view to_string(ConvLayout layout) {
  switch (layout) {
    case ConvLayout::nchw:
      return "nchw";
    case ConvLayout::nhwc:
      return "nhwc";
    case ConvLayout::blocked:
      return "blocked";
    case ConvLayout::any:
      return "any";
  }
  return "?";
}

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const DeviceDescription& describe() const = 0;

  // Each factory throws Unsupported (with a reason that a user can act on) when this device or
  // library cannot run the problem, and Error on a failure.
  virtual std::unique_ptr<Kernel> gemm(const GemmShape& shape) = 0;
  // The same GEMM with cold weights: every call reads B from main memory, as a layer of a model
  // larger than the caches does. Unsupported by default.
  virtual std::unique_ptr<Kernel> gemm_cold_weights(const GemmShape& shape);
  virtual std::unique_ptr<Kernel> conv(const ConvShape& shape, ConvLayout layout) = 0;
  // The same convolution with cold weights, as gemm_cold_weights. Unsupported by default.
  virtual std::unique_ptr<Kernel> conv_cold_weights(const ConvShape& shape, ConvLayout layout);
  // `bytes` is the total working set of all arrays together.
  virtual std::unique_ptr<Kernel> stream(StreamOp op, std::int64_t bytes) = 0;
  // An elementwise, softmax or layer-norm op through the device's library. Unsupported by
  // default.
  virtual std::unique_ptr<Kernel> vector_op(const VectorOpShape& shape);
  // Own kernel that keeps the arithmetic units busy with independent FMAs.
  virtual std::unique_ptr<Kernel> fma(DType dtype) = 0;
  // The smallest real operation of the backend's library: its time is the per-op overhead.
  virtual std::unique_ptr<Kernel> tiny_op() = 0;
  // The same, replayed from a graph (CUDA graphs). Unsupported by default.
  virtual std::unique_ptr<Kernel> graph_tiny_op();
  // Host<->device copy of `bytes`, from pinned or pageable host memory. Unsupported by default.
  virtual std::unique_ptr<Kernel> transfer(TransferDir dir, bool pinned, std::int64_t bytes);
  // Both directions at once (two streams); bytes() counts both. Unsupported by default.
  virtual std::unique_ptr<Kernel> transfer_bidirectional(std::int64_t bytes_each_way);
  // Device-to-device copy through the runtime (cudaMemcpy). Unsupported by default.
  virtual std::unique_ptr<Kernel> device_copy(std::int64_t bytes);
  // A short, fixed kernel timed between points to detect interference from other work.
  virtual std::unique_ptr<Kernel> sentinel() = 0;
  // A dependent add chain on every thread at once, one add a cycle: flops() counts the adds of
  // one thread, so its rate is the core clock in Hz. Unsupported by default.
  virtual std::unique_ptr<Kernel> clock();
};

}  // namespace truepeak
