// A dependent add chain: each add needs the previous result, so the chain runs at one add per
// cycle whatever the core's width; the loop's own counter and branch run beside it. The step is
// a register, not an immediate, so that no renamer can fold the adds together.
#include "kernels/cpu/clock.hpp"

#include <fmt/format.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "core/error.hpp"

namespace truepeak::cpu {
namespace {

constexpr int kAddsPerIteration = 64;

#if defined(__x86_64__)
#define TRUEPEAK_ADD_1 "add %1, %0\n\t"
#elif defined(__aarch64__)
#define TRUEPEAK_ADD_1 "add %0, %0, %1\n\t"
#endif

#ifdef TRUEPEAK_ADD_1
#define TRUEPEAK_ADD_8                                                                      \
  TRUEPEAK_ADD_1 TRUEPEAK_ADD_1 TRUEPEAK_ADD_1 TRUEPEAK_ADD_1 TRUEPEAK_ADD_1 TRUEPEAK_ADD_1 \
      TRUEPEAK_ADD_1 TRUEPEAK_ADD_1

std::uint64_t add_chain(std::uint64_t value, std::uint64_t step, std::int64_t iterations) {
  for (std::int64_t i = 0; i < iterations; ++i) {
    asm volatile(TRUEPEAK_ADD_8 TRUEPEAK_ADD_8 TRUEPEAK_ADD_8 TRUEPEAK_ADD_8 TRUEPEAK_ADD_8
                     TRUEPEAK_ADD_8 TRUEPEAK_ADD_8 TRUEPEAK_ADD_8
                 : "+r"(value)
                 : "r"(step));
  }
  return value;
}
#endif

#ifdef TRUEPEAK_ADD_1
constexpr std::int64_t kKernelIterations = 50'000;  // 3.2 M adds: under 1 ms at 4 GHz

class ClockKernel final : public Kernel {
 public:
  explicit ClockKernel(int threads)
      : threads_(std::max(1, threads)), values_(threads_, 0), seconds_(threads_, 0.0) {}
  std::string name() const override { return "clock"; }
  double flops() const override { return double(kKernelIterations) * kAddsPerIteration; }
  double bytes() const override { return 0; }
  std::string impl() const override { return "own:add_chain"; }
  void check() override {
    run_s();
    for (int t = 0; t < threads_; ++t) {
      const std::uint64_t expected = start(t) + step(t) * kKernelIterations * kAddsPerIteration;
      if (values_[t] != expected)
        throw CheckFailed(fmt::format("clock: thread {} summed {} instead of {}", t, values_[t], expected));
    }
  }
  // The fastest thread's chain, timed inside the parallel region: the threads' start and join
  // are not the core's clock.
  double run_s() override {
#pragma omp parallel num_threads(threads_)
    {
      const int t = omp_get_thread_num();
      const auto begin = std::chrono::steady_clock::now();
      values_[t] = add_chain(start(t), step(t), kKernelIterations);
      seconds_[t] = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    }
    return *std::min_element(seconds_.begin(), seconds_.end());
  }

 private:
  static std::uint64_t start(int t) { return 11 + static_cast<std::uint64_t>(t); }
  static std::uint64_t step(int t) { return 3 + static_cast<std::uint64_t>(t); }
  int threads_;
  std::vector<std::uint64_t> values_;
  std::vector<double> seconds_;
};
#endif

}  // namespace

std::unique_ptr<Kernel> make_clock_kernel(int threads) {
#ifdef TRUEPEAK_ADD_1
  return std::make_unique<ClockKernel>(threads);
#else
  (void)threads;
  throw Unsupported("clock: no add chain for this ISA");
#endif
}

}  // namespace truepeak::cpu
