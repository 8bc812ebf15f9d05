// The vector peak: every thread runs independent FMA chains. Every accumulator's final value is
// stored and compared with a scalar fused multiply-add reference, which both checks the result
// and keeps the compiler from dropping the work.
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/error.hpp"
#include "kernels/cpu/own_kernels.hpp"

namespace truepeak::cpu {
namespace {

// acc -> acc * mul + add converges to add / (1 - mul) = 1 from any start in (0, 2): values stay
// normal (no denormal slow path) and bounded for any number of iterations.
constexpr float kMul = 0.9990234375f;  // 1 - 2^-10
constexpr float kAdd = 0.0009765625f;  // 2^-10

class FmaKernel final : public Kernel {
 public:
  FmaKernel(int threads, std::int64_t iterations, std::string label)
      : threads_(std::max(1, threads)), variant_(best_fma_variant()), label_(std::move(label)) {
    const int per_thread = variant_.lanes * variant_.chains;
    // ~1 ms per run at 2 FMA/cycle and ~2.5 GHz unless told otherwise.
    iterations_ =
        iterations > 0 ? iterations : std::max<std::int64_t>(1, 5'000'000 / variant_.chains);
    init_.resize(per_thread);
    for (int i = 0; i < per_thread; ++i) {
      init_[i] = 0.25f + 1.5f * static_cast<float>(i) / static_cast<float>(per_thread);
    }
    out_.assign(static_cast<std::size_t>(per_thread) * threads_, 0.0f);
  }

  std::string name() const override { return label_; }
  double flops() const override {
    return 2.0 * threads_ * variant_.lanes * variant_.chains * static_cast<double>(iterations_);
  }
  double bytes() const override { return 0; }
  std::string impl() const override {
    return fmt::format("own {} FMA, {} chains x {} lanes, {} threads", variant_.isa,
                       variant_.chains, variant_.lanes, threads_);
  }

  void check() override {
    std::fill(out_.begin(), out_.end(), 0.0f);
    run_s();
    const int per_thread = variant_.lanes * variant_.chains;
    // One lane per chain (a diagonal, so every lane position is covered across chains) against
    // the scalar reference; every thread must match it.
    for (int chain = 0; chain < variant_.chains; ++chain) {
      const int i = chain * variant_.lanes + chain % variant_.lanes;
      const float expected = fma_chain_reference(init_[i], kMul, kAdd, iterations_);
      for (int t = 0; t < threads_; ++t) {
        const float got = out_[static_cast<std::size_t>(t) * per_thread + i];
        if (got != expected) {
          throw CheckFailed(fmt::format("{}: thread {} accumulator {} is {:.9g}, expected {:.9g}",
                                        name(), t, i, got, expected));
        }
      }
    }
  }

  double run_s() override {
    const int per_thread = variant_.lanes * variant_.chains;
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads_)
    {
      const int t = omp_get_thread_num();
      variant_.run(init_.data(), kMul, kAdd, iterations_,
                   out_.data() + static_cast<std::size_t>(t) * per_thread);
    }
    const auto stop = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(stop - start).count();
  }

 private:
  int threads_;
  FmaVariant variant_;
  std::string label_;
  std::int64_t iterations_ = 0;
  std::vector<float> init_;
  std::vector<float> out_;
};

}  // namespace

std::unique_ptr<Kernel> make_fma_kernel(DType dtype, int threads, std::int64_t iterations) {
  if (dtype != DType::f32) {
    throw Unsupported(fmt::format("fma {}: the CPU backend's own FMA kernel measures f32 only",
                                  to_string(dtype)));
  }
  return std::make_unique<FmaKernel>(threads, iterations, "fma f32");
}

std::unique_ptr<Kernel> make_sentinel_kernel(int threads) {
  // A third of the FMA kernel's default run: long enough to time well, short enough to run
  // between every two points.
  return std::make_unique<FmaKernel>(threads, 100'000, "sentinel fma f32");
}

}  // namespace truepeak::cpu
