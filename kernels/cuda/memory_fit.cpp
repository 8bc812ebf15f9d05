#include "kernels/cuda/memory_fit.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/units.hpp"
#include "kernels/cuda/cuda_check.hpp"

namespace truepeak::cuda_detail {

std::int64_t usable_device_bytes() {
  std::size_t free_bytes = 0, total_bytes = 0;
  TP_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const auto free_i = static_cast<std::int64_t>(free_bytes);
  const std::int64_t margin = std::max<std::int64_t>(256 * kMiB, free_i / 20);
  return std::max<std::int64_t>(0, free_i - margin);
}

void require_device_bytes(std::int64_t bytes, const std::string& what) {
  const std::int64_t usable = usable_device_bytes();
  if (bytes > usable)
    throw Unsupported(fmt::format("{} needs {} of device memory, {} is free to use", what,
                                  format_bytes(static_cast<double>(bytes)),
                                  format_bytes(static_cast<double>(usable))));
}

}  // namespace truepeak::cuda_detail
