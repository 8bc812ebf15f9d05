#include "calibrate/backends.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#ifdef TRUEPEAK_HAVE_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#endif

namespace truepeak {
namespace {

struct GpuCount {
  int count = 0;
  std::string reason;
};

GpuCount count_gpus() {
#ifdef TRUEPEAK_HAVE_CUDA
  const auto c = cuda_device_count();
  return {c.count, c.reason};
#else
  return {0, "this truepeak was built without the CUDA backend (TRUEPEAK_ENABLE_CUDA=OFF)"};
#endif
}

}  // namespace

DeviceSelection select_devices(const std::string& spec) {
  DeviceSelection sel;
  if (spec == "cpu") {
    sel.ids.push_back("cpu");
    return sel;
  }
  if (spec == "all") {
    sel.ids.push_back("cpu");
    const auto gpus = count_gpus();
    for (int i = 0; i < gpus.count; ++i) sel.ids.push_back(fmt::format("cuda:{}", i));
    if (gpus.count == 0) sel.notes.push_back(fmt::format("no GPU found ({}): calibrating the CPU only", gpus.reason));
    return sel;
  }
  if (spec == "cuda" || spec.rfind("cuda:", 0) == 0) {
    int index = 0;
    if (spec != "cuda") {
      const auto digits = spec.substr(5);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
        throw InputError(fmt::format("--device {}: expected cuda:N with N a device number", spec));
      }
      index = std::stoi(digits);
    }
    const auto gpus = count_gpus();
    if (gpus.count == 0) throw InputError(fmt::format("--device {}: no GPU available: {}", spec, gpus.reason));
    if (index >= gpus.count) {
      throw InputError(fmt::format("--device {}: there are {} GPU(s), numbered from 0", spec, gpus.count));
    }
    sel.ids.push_back(fmt::format("cuda:{}", index));
    return sel;
  }
  throw InputError(fmt::format("--device {}: unknown device (use cpu, cuda:N or all)", spec));
}

std::unique_ptr<Backend> make_backend(const std::string& id, int threads) {
  if (id == "cpu") return make_cpu_backend(CpuBackendOptions{threads});
#ifdef TRUEPEAK_HAVE_CUDA
  if (id.rfind("cuda:", 0) == 0) return make_cuda_backend(std::stoi(id.substr(5)));
#endif
  throw Unsupported(fmt::format("no backend for device '{}' in this build", id));
}

}  // namespace truepeak
