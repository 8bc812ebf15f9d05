// STREAM kernels (McCalpin's copy, scale, add, triad, and update, the in-place form that reads
// each line and writes it back) on double arrays over OpenMP threads. Each
// thread owns one contiguous part of every array (a static split, 64-byte aligned), initialises it
// itself (first touch places its pages near that thread) and runs the loops over it.
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "kernels/cpu/aligned_buffer.hpp"
#include "kernels/cpu/own_kernels.hpp"
#include "kernels/cpu/random_fill.hpp"
#include "kernels/cpu/stream_loops.hpp"

namespace truepeak::cpu {
namespace {

struct Range {
  std::size_t begin = 0, end = 0;
};

// Thread t's part of n elements: multiples of 8 doubles (64 bytes) so that every part starts on a
// cache line, which the non-temporal stores need.
Range thread_range(int thread, int threads, std::size_t n) {
  const std::size_t lines = (n + 7) / 8;
  const std::size_t per = lines / threads, extra = lines % threads;
  const std::size_t first = thread * per + std::min<std::size_t>(thread, extra);
  const std::size_t count = per + (static_cast<std::size_t>(thread) < extra ? 1 : 0);
  return {std::min(n, first * 8), std::min(n, (first + count) * 8)};
}

class StreamKernel final : public Kernel {
 public:
  StreamKernel(StreamOp op, std::int64_t bytes, const StreamOptions& options)
      : op_(op),
        threads_(std::max(1, options.threads)),
        // A store to the line just read needs no streaming form: update stores regularly.
        non_temporal_(options.non_temporal && op != StreamOp::update && stream_nt_available()) {
    const int arrays = stream_arrays(op);
    n_ = static_cast<std::size_t>(bytes / (arrays * static_cast<std::int64_t>(sizeof(double))));
    if (n_ < 8) {
      throw Error(fmt::format("stream {} {}: the working set is too small", to_string(op), bytes));
    }
    // Only the arrays this op touches.
    const bool uses_a = op != StreamOp::scale && op != StreamOp::update;
    const bool uses_b = op != StreamOp::copy && op != StreamOp::update;
    const bool uses_c = true;
    if (uses_a) a_ = AlignedBuffer<double>(n_);
    if (uses_b) b_ = AlignedBuffer<double>(n_);
    if (uses_c) c_ = AlignedBuffer<double>(n_);
      // First touch by the thread that will use each part, with random values.
#pragma omp parallel num_threads(threads_)
    {
      const Range range = thread_range(omp_get_thread_num(), threads_, n_);
      for (std::size_t i = range.begin; i < range.end; ++i) {
        if (uses_a) a_[i] = uniform_pm1(0xa, i);
        if (uses_b) b_[i] = uniform_pm1(0xb, i);
        c_[i] = uniform_pm1(0xc, i);
      }
    }
    // Tiny working sets: repeat the pass inside one run so that a sample lasts at least
    // min_sample_s even at the fastest plausible rate (kMaxBpsPerThread). Derived from the size,
    // not from a timed pass, so that interference during set-up cannot change it.
    const double fastest_pass_s = bytes_moved() / (kMaxBpsPerThread * threads_);
    if (fastest_pass_s < options.min_sample_s) {
      repeats_ = static_cast<int>(std::ceil(options.min_sample_s / fastest_pass_s));
    }
  }

  std::string name() const override {
    return fmt::format("stream {} {}{}", to_string(op_), format_bytes(bytes() / stream_passes(op_)),
                       non_temporal_ ? " nt" : "");
  }
  double flops() const override {
    if (op_ == StreamOp::triad) return 2.0 * n_;
    return op_ == StreamOp::copy || op_ == StreamOp::update ? 0.0 : 1.0 * n_;
  }
  double bytes() const override { return bytes_moved(); }
  std::string impl() const override {
    return fmt::format("own OpenMP, {} threads{}{}", threads_,
                       non_temporal_ ? ", non-temporal stores" : "",
                       repeats_ > 1 ? fmt::format(", {} passes per run", repeats_) : "");
  }

  void check() override {
    if (op_ == StreamOp::update) {
      // The values before one run, and after it: negated once per pass.
      const std::vector<double> before(c_.data(), c_.data() + n_);
      run_s();
      check_stream(op_, before, {}, c_.span(), repeats_ % 2 ? -1.0 : 1.0);
      return;
    }
    run_s();
    check_stream(op_, a_.span(), b_.span(), c_.span(), kStreamScalar);
  }

  double run_s() override {
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads_)
    {
      // Each thread repeats over its own part only, so no barrier is needed between passes.
      const Range range = thread_range(omp_get_thread_num(), threads_, n_);
      const std::size_t count = range.end - range.begin;
      const std::size_t at = range.begin;
      for (int pass = 0; pass < repeats_; ++pass) {
        run_part(at, count);
      }
    }
    const auto stop = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(stop - start).count() / repeats_;
  }

 private:
  void run_part(std::size_t at, std::size_t count) {
    if (count == 0) {
      return;
    }
    const double q = kStreamScalar;
    switch (op_) {
      case StreamOp::copy:
        (non_temporal_ ? stream_copy_nt : stream_copy)(c_.data() + at, a_.data() + at, count);
        break;
      case StreamOp::scale:
        (non_temporal_ ? stream_scale_nt : stream_scale)(b_.data() + at, c_.data() + at, q, count);
        break;
      case StreamOp::add:
        (non_temporal_ ? stream_add_nt : stream_add)(c_.data() + at, a_.data() + at, b_.data() + at,
                                                     count);
        break;
      case StreamOp::triad:
        (non_temporal_ ? stream_triad_nt : stream_triad)(a_.data() + at, b_.data() + at,
                                                         c_.data() + at, q, count);
        break;
      case StreamOp::update:
        stream_update(c_.data() + at, count);
        break;
    }
  }

  double bytes_moved() const {
    return static_cast<double>(stream_arrays(op_) * stream_passes(op_)) * static_cast<double>(n_) *
           sizeof(double);
  }

  // Above what one core's L1 can deliver (2 loads + 1 store of 64 bytes per cycle at ~3 GHz).
  static constexpr double kMaxBpsPerThread = 500e9;

  StreamOp op_;
  int threads_;
  bool non_temporal_;
  std::size_t n_ = 0;
  int repeats_ = 1;
  AlignedBuffer<double> a_, b_, c_;
};

}  // namespace

std::unique_ptr<Kernel> make_stream_kernel(StreamOp op, std::int64_t bytes,
                                           const StreamOptions& options) {
  return std::make_unique<StreamKernel>(op, bytes, options);
}

void check_stream(StreamOp op, std::span<const double> a, std::span<const double> b,
                  std::span<const double> c, double q) {
  const auto fail = [&](std::size_t i, double got, double expected) {
    throw CheckFailed(fmt::format("stream {}: element {} is {:.17g}, expected {:.17g}",
                                  to_string(op), i, got, expected));
  };
  // The loops may be compiled with or without fused multiply-add: allow a few ulps.
  const auto same = [](double got, double expected, double scale) {
    return std::fabs(got - expected) <= 4 * 2.220446049250313e-16 * scale;
  };
  const std::size_t n = c.size();
  for (std::size_t i = 0; i < n; ++i) {
    switch (op) {
      case StreamOp::copy:
        if (!(a[i] == c[i])) fail(i, c[i], a[i]);
        break;
      case StreamOp::scale:
        if (!same(b[i], q * c[i], std::fabs(q * c[i]))) fail(i, b[i], q * c[i]);
        break;
      case StreamOp::add:
        if (!same(c[i], a[i] + b[i], std::fabs(a[i]) + std::fabs(b[i]))) fail(i, c[i], a[i] + b[i]);
        break;
      case StreamOp::triad:
        if (!same(a[i], b[i] + q * c[i], std::fabs(b[i]) + std::fabs(q * c[i])))
          fail(i, a[i], b[i] + q * c[i]);
        break;
      case StreamOp::update:
        if (!(c[i] == q * a[i])) fail(i, c[i], q * a[i]);
        break;
    }
  }
}

}  // namespace truepeak::cpu
