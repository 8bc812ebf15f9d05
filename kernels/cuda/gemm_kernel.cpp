// GEMM through cuBLASLt with the heuristic's algorithm and a fixed workspace.
//
// Layout: GemmShape is C[m][n] = A[m][k] * B[k][n]. Frameworks store a linear layer's weight as
// [n][k] (nn.Linear) and compute x * W^T; that is cuBLASLt's "TN" layout, the one its FP8 and
// int8 kernels require, and the one used here for every dtype (see gemm_layout.hpp for the
// mapping onto cuBLASLt's column-major matrices).
//
// Cache state: operands rotate through enough buffer sets to cover twice the L2 size, so each
// call reads its operands from device memory, as a layer's weights are in a real model (a small
// GEMM repeated on the same buffers would run from L2 and overstate what a model sees).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/cuda_owners.hpp"
#include "kernels/cuda/device_kernels.hpp"
#include "kernels/cuda/gemm_layout.hpp"
#include "kernels/cuda/memory_fit.hpp"
#include "kernels/cuda/nvml.hpp"

namespace truepeak::cuda_detail {

class LtContext {
 public:
  LtHandle handle = make_lt_handle();
};

std::shared_ptr<LtContext> make_lt_context(int device) {
  use_device(device);
  return std::make_shared<LtContext>();
}

namespace {

constexpr std::int64_t kWorkspaceBytes = 32 * kMiB;  // NVIDIA's recommendation for Hopper
constexpr int kMaxSets = 256;
constexpr int kCheckSamples = 256;
constexpr double kTargetSampleS = 200e-6;  // inner batch: enough calls to make a sample this long
constexpr int kHeuristicResults = 16;      // candidates asked of cuBLASLt's heuristic
constexpr int kCandidates = 8;             // of those, the first that run are timed
constexpr double kRampS = 0.05;            // busy time before timing candidates: clocks ramp
constexpr double kCandidateS = 2e-3;       // each candidate: two batches of calls this long
constexpr std::int64_t kScaleStrideBytes = 256;

struct GemmTypes {
  cudaDataType_t ab, c;
  cublasComputeType_t compute;
  cudaDataType_t scale;
  Elem ab_elem, c_elem;
  int ab_bytes, c_bytes;
  int min_cc;  // compute capability x 10
};

GemmTypes gemm_types(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, Elem::f32, Elem::f32, 4,
              4,          0};
    case DType::tf32:  // f32 storage, TF32 tensor cores
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32,
              CUDA_R_32F, Elem::f32,  Elem::f32,
              4,          4,          80};
    case DType::f16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, Elem::f16, Elem::f16, 2,
              2,          0};
    case DType::bf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, Elem::bf16, Elem::bf16, 2,
              2,           80};
    case DType::fp8_e4m3:  // C and D bf16 (a valid FP8 row of cuBLASLt's type table)
      return {CUDA_R_8F_E4M3,
              CUDA_R_16BF,
              CUBLAS_COMPUTE_32F,
              CUDA_R_32F,
              Elem::fp8_e4m3,
              Elem::bf16,
              1,
              2,
              89};
    case DType::int8:  // s8 x s8 -> s32 with int32 alpha and beta
      return {CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUDA_R_32I, Elem::int8, Elem::int32, 1,
              4,         0};
    case DType::f64:
      break;
  }
  throw Unsupported("f64 GEMM is not part of the GPU calibration");
}

template <typename T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  TP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
}

LtLayout make_layout(cudaDataType_t type, const LtMatrix& m, std::int64_t batch) {
  cublasLtMatrixLayout_t layout = nullptr;
  TP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, static_cast<std::uint64_t>(m.rows),
                                             static_cast<std::uint64_t>(m.cols), m.ld));
  LtLayout owner(layout);
  if (batch > 1) {
    const auto count = static_cast<std::int32_t>(batch);
    TP_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                     &count, sizeof(count)));
    TP_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout,
                                                     CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                     &m.batch_stride, sizeof(m.batch_stride)));
  }
  return owner;
}

std::string algo_text(const cublasLtMatmulHeuristicResult_t& result) {
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr) -> long long {
    std::uint32_t value = 0;  // every attribute read here is a 32-bit integer
    std::size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&result.algo, attr, &value, sizeof(value), &written) !=
        CUBLAS_STATUS_SUCCESS)
      return -1;
    return value;
  };
  return fmt::format("cublasLt algo={} tile={} stages={} cluster={} splitk={} workspace={}/{}",
                     get(CUBLASLT_ALGO_CONFIG_ID), get(CUBLASLT_ALGO_CONFIG_TILE_ID),
                     get(CUBLASLT_ALGO_CONFIG_STAGES_ID), get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID),
                     get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                     format_bytes(static_cast<double>(result.workspaceSize)),
                     format_bytes(static_cast<double>(kWorkspaceBytes)));
}

class GemmKernel final : public Kernel {
 public:
  GemmKernel(const DeviceFacts& device, std::shared_ptr<LtContext> lt, const GemmShape& shape)
      : device_(device.index),
        monitor_(device.monitor),
        lt_(std::move(lt)),
        shape_(shape),
        types_(gemm_types(shape.dtype)) {
    if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.batch <= 0)
      throw InputError(fmt::format("gemm {}: every dimension must be positive", shape.str()));
    if (device.cc() < types_.min_cc)
      throw Unsupported(fmt::format("{} GEMM needs compute capability {}.{} or newer; {} has {}.{}",
                                    to_string(shape.dtype), types_.min_cc / 10, types_.min_cc % 10,
                                    device.name, device.cc_major, device.cc_minor));
    if (const auto problem = gemm_alignment_problem(shape)) throw Unsupported(*problem);
    use_device(device_);
    stream_ = make_stream();
    timer_.emplace();

    x_elems_ = shape.batch * shape.m * shape.k;
    w_elems_ = shape.batch * shape.n * shape.k;
    c_elems_ = shape.batch * shape.m * shape.n;
    x_bytes_ = x_elems_ * types_.ab_bytes;
    w_bytes_ = w_elems_ * types_.ab_bytes;
    c_bytes_ = c_elems_ * types_.c_bytes;
    const std::int64_t set_bytes = x_bytes_ + w_bytes_ + c_bytes_;
    const std::int64_t fixed_bytes = kWorkspaceBytes + 1 * kMiB;
    const std::int64_t usable = usable_device_bytes();
    std::int64_t sets =
        std::clamp<std::int64_t>((2 * device.l2_bytes + set_bytes - 1) / set_bytes, 1, kMaxSets);
    sets = std::min<std::int64_t>(sets, (usable - fixed_bytes) / set_bytes);
    if (sets < 1) require_device_bytes(set_bytes + fixed_bytes, "gemm " + shape.str());
    sets_ = static_cast<int>(sets);

    // Buffers are padded to 256 bytes so every set starts aligned.
    x_stride_ = round_up(x_bytes_);
    w_stride_ = round_up(w_bytes_);
    c_stride_ = round_up(c_bytes_);
    x_ = make_device_buffer(x_stride_ * sets_);
    w_ = make_device_buffer(w_stride_ * sets_);
    c_ = make_device_buffer(c_stride_ * sets_);
    workspace_ = make_device_buffer(kWorkspaceBytes);
    scales_ = make_device_buffer(2 * kScaleStrideBytes);
    fill_random(x_.get(), types_.ab_elem, x_stride_ * sets_ / types_.ab_bytes, 11, stream_.get());
    fill_random(w_.get(), types_.ab_elem, w_stride_ * sets_ / types_.ab_bytes, 12, stream_.get());
    fill_random(c_.get(), types_.c_elem, c_stride_ * sets_ / types_.c_bytes, 13, stream_.get());
    // Two scale factors of 1.0, 256 bytes apart: each as aligned as a tensor of its own.
    const float one = 1.0f;
    for (int i = 0; i < 2; ++i)
      TP_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(scales_.get()) + i * kScaleStrideBytes, &one,
                                    sizeof(one), cudaMemcpyHostToDevice, stream_.get()));

    cublasLtMatmulDesc_t desc = nullptr;
    TP_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, types_.compute, types_.scale));
    desc_ = LtMatmulDesc(desc);
    set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<std::int32_t>(CUBLAS_OP_T));
    set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<std::int32_t>(CUBLAS_OP_N));
    if (shape.dtype == DType::fp8_e4m3) {
      // FP8 GEMMs take per-tensor scales (device pointers); 1.0 keeps the reference simple.
      const void* a_scale = scales_.as<float>();
      const void* b_scale = static_cast<char*>(scales_.get()) + kScaleStrideBytes;
      set_desc(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, a_scale);
      set_desc(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, b_scale);
    }
    const TnLayout tn = tn_layout(shape);
    a_layout_ = make_layout(types_.ab, tn.a, shape.batch);  // W: [n][k]
    b_layout_ = make_layout(types_.ab, tn.b, shape.batch);  // X: [m][k]
    c_layout_ = make_layout(types_.c, tn.c, shape.batch);   // C: [m][n]

    cublasLtMatmulPreference_t pref = nullptr;
    TP_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    LtPreference pref_owner(pref);
    const auto workspace_limit = static_cast<std::uint64_t>(kWorkspaceBytes);
    TP_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_limit, sizeof(workspace_limit)));
    std::vector<cublasLtMatmulHeuristicResult_t> results(kHeuristicResults);
    int returned = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        lt_->handle.get(), desc, a_layout_.get(), b_layout_.get(), c_layout_.get(), c_layout_.get(),
        pref, static_cast<int>(results.size()), results.data(), &returned);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && returned == 0))
      throw Unsupported(
          fmt::format("cuBLASLt has no algorithm for gemm {} on {}", shape.str(), device.name));
    TP_CUBLAS_CHECK(status);
    const double best_s = choose_algorithm(results, returned);
    // Enough calls per sample to make it about kTargetSampleS long.
    inner_ = static_cast<int>(std::clamp(std::ceil(kTargetSampleS / best_s), 1.0, 64.0));
  }

  std::string name() const override { return "gemm " + shape_.str(); }
  double flops() const override { return shape_.flops(); }
  double bytes() const override { return shape_.bytes(); }
  std::string impl() const override {
    return fmt::format("{} sets={} inner={}{}", impl_, sets_, inner_, fastest_.text());
  }
  std::string layout() const override { return "tn"; }

  void check() override {
    use_device(device_);
    TP_CUBLAS_CHECK(matmul(*algo_, 0));
    std::vector<std::int64_t> samples = sample_indices();
    const int count = static_cast<int>(samples.size() / 3);
    DeviceBuffer samples_dev =
        make_device_buffer(static_cast<std::int64_t>(samples.size() * sizeof(std::int64_t)));
    DeviceBuffer results_dev =
        make_device_buffer(count * static_cast<std::int64_t>(sizeof(GemmSampleResult)));
    TP_CUDA_CHECK(cudaMemcpyAsync(samples_dev.get(), samples.data(),
                                  samples.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice,
                                  stream_.get()));
    gemm_reference(types_.ab_elem, types_.c_elem, x_.get(), w_.get(), c_.get(), shape_.m, shape_.n,
                   shape_.k, samples_dev.as<std::int64_t>(), count,
                   results_dev.as<GemmSampleResult>(), stream_.get());
    std::vector<GemmSampleResult> results(count);
    TP_CUDA_CHECK(cudaMemcpyAsync(results.data(), results_dev.get(),
                                  count * sizeof(GemmSampleResult), cudaMemcpyDeviceToHost,
                                  stream_.get()));
    TP_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    for (int s = 0; s < count; ++s) {
      const auto& r = results[s];
      const double tol = gemm_tolerance(shape_.dtype, r.reference, r.abs_sum);
      if (!(std::fabs(r.got - r.reference) <= tol))
        throw CheckFailed(fmt::format(
            "gemm {}: C[{}][{}][{}] = {} but the reference is {} (tolerance {:.3g}, {})",
            shape_.str(), samples[3 * s], samples[3 * s + 1], samples[3 * s + 2], r.got,
            r.reference, tol, impl_));
    }
  }

  double run_s() override {
    use_device(device_);
    timer_->start(stream_.get());
    for (int i = 0; i < inner_; ++i) {
      next_set_ = (next_set_ + 1) % sets_;
      TP_CUBLAS_CHECK(matmul(*algo_, next_set_));
    }
    timer_->stop(stream_.get());
    const double call_s = timer_->elapsed_s() / inner_;
    fastest_.note(call_s, monitor_.get());
    return call_s;
  }

 private:
  static std::int64_t round_up(std::int64_t bytes) { return (bytes + 255) / 256 * 256; }

  // Seconds per call of `algo`: the fastest of `batches` batches of `calls` calls, each call on
  // the next buffer set in turn, as run_s does.
  double time_calls(const cublasLtMatmulAlgo_t& algo, int calls, int batches) {
    return fastest_batch_s(*timer_, stream_.get(), calls, batches, [&] {
      next_set_ = (next_set_ + 1) % sets_;
      TP_CUBLAS_CHECK(matmul(algo, next_set_));
    });
  }

  // cuBLASLt's heuristic ranks its candidates, but its first choice is not always the fastest on
  // a given part: the first kCandidates that run are timed, after the GPU has been kept busy
  // long enough for its clocks to ramp, and the fastest is kept. Returns its seconds per call.
  double choose_algorithm(const std::vector<cublasLtMatmulHeuristicResult_t>& results,
                          int returned) {
    std::vector<int> runnable;
    std::string failures;
    for (int i = 0; i < returned && static_cast<int>(runnable.size()) < kCandidates; ++i) {
      if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
      const cublasStatus_t run = matmul(results[i].algo, 0);
      if (run != CUBLAS_STATUS_SUCCESS) {
        failures += fmt::format(" {}", cublasLtGetStatusName(run));
        continue;
      }
      runnable.push_back(i);
    }
    if (runnable.empty())
      throw Unsupported(
          fmt::format("no cuBLASLt algorithm ran gemm {}:{}", shape_.str(), failures));
    const auto calls_for = [](double seconds, double call_s, int most) {
      return static_cast<int>(std::clamp(std::ceil(seconds / call_s), 1.0, double(most)));
    };
    const double first_s = time_calls(results[runnable[0]].algo, 1, 1);
    time_calls(results[runnable[0]].algo, calls_for(kRampS, first_s, 4096), 1);
    double best_s = 0;
    for (const int i : runnable) {
      const double estimate_s = time_calls(results[i].algo, 1, 1);
      const double call_s = time_calls(results[i].algo, calls_for(kCandidateS, estimate_s, 64), 2);
      if (!algo_ || call_s < best_s) {
        algo_ = results[i].algo;
        best_s = call_s;
        impl_ = fmt::format("{} heuristic-rank={} of {} timed", algo_text(results[i]), i,
                            runnable.size());
      }
    }
    return best_s;
  }

  cublasStatus_t matmul(const cublasLtMatmulAlgo_t& algo, int set) {
    auto* x = static_cast<char*>(x_.get()) + set * x_stride_;
    auto* w = static_cast<char*>(w_.get()) + set * w_stride_;
    auto* c = static_cast<char*>(c_.get()) + set * c_stride_;
    const float alpha_f = 1.0f, beta_f = 0.0f;
    const std::int32_t alpha_i = 1, beta_i = 0;
    const bool integer = types_.scale == CUDA_R_32I;
    const void* alpha = integer ? static_cast<const void*>(&alpha_i) : &alpha_f;
    const void* beta = integer ? static_cast<const void*>(&beta_i) : &beta_f;
    return cublasLtMatmul(lt_->handle.get(), desc_.get(), alpha, w, a_layout_.get(), x,
                          b_layout_.get(), beta, c, c_layout_.get(), c, c_layout_.get(), &algo,
                          workspace_.get(), kWorkspaceBytes, stream_.get());
  }

  std::vector<std::int64_t> sample_indices() const {
    std::mt19937_64 rng(0x5eed);
    std::vector<std::int64_t> out = {0, 0, 0, shape_.batch - 1, shape_.m - 1, shape_.n - 1};
    for (int s = 0; s < kCheckSamples; ++s) {
      out.push_back(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(shape_.batch)));
      out.push_back(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(shape_.m)));
      out.push_back(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(shape_.n)));
    }
    return out;
  }

  int device_;
  std::shared_ptr<const NvmlMonitor> monitor_;
  FastestSampleState fastest_;
  std::shared_ptr<LtContext> lt_;
  GemmShape shape_;
  GemmTypes types_;
  Stream stream_;
  std::int64_t x_elems_ = 0, w_elems_ = 0, c_elems_ = 0;
  std::int64_t x_bytes_ = 0, w_bytes_ = 0, c_bytes_ = 0;
  std::int64_t x_stride_ = 0, w_stride_ = 0, c_stride_ = 0;
  int sets_ = 1, next_set_ = 0, inner_ = 1;
  DeviceBuffer x_, w_, c_, workspace_, scales_;
  LtMatmulDesc desc_;
  LtLayout a_layout_, b_layout_, c_layout_;
  std::optional<cublasLtMatmulAlgo_t> algo_;
  std::string impl_;
  std::optional<EventTimer> timer_;  // events belong to the device current when made
};

}  // namespace

std::unique_ptr<Kernel> make_gemm_kernel(const DeviceFacts& device, std::shared_ptr<LtContext> lt,
                                         const GemmShape& shape) {
  return std::make_unique<GemmKernel>(device, std::move(lt), shape);
}

}  // namespace truepeak::cuda_detail
