// Forward convolution through cuDNN 9, by both of its interfaces: the graph API's engines (what
// frameworks run; kernels/cuda/cudnn_graph.hpp) and the legacy API's algorithms
// (cudnnConvolutionForward, heuristics of cudnnGetConvolutionForwardAlgorithm_v7). The candidates
// of each that fit the workspace limit are timed; check() checks every one that ran against the
// reference, and the fastest that passes is kept with its workspace.
//
// f32 is true f32 arithmetic: the legacy algorithms run with CUDNN_FMA_MATH and the graph engines
// that round to TF32 are left out (cuDNN would otherwise use TF32 tensor cores, a different
// dtype). f16 and bf16 take the math each candidate comes with; the check's tolerance is that of
// f32 accumulation, so a candidate that accumulates in 16 bits and loses more fails it.
// Cache state: inputs and outputs rotate through enough sets to cover twice the L2 size.
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
#include "kernels/cuda/cudnn_check.hpp"
#include "kernels/cuda/cudnn_graph.hpp"
#include "kernels/cuda/device_kernels.hpp"
#include "kernels/cuda/memory_fit.hpp"

namespace truepeak::cuda_detail {

namespace {
void release_cudnn(cudnnHandle_t handle) noexcept { TP_CUDNN_CHECK_NOTHROW(cudnnDestroy(handle)); }
void release_tensor(cudnnTensorDescriptor_t d) noexcept {
  TP_CUDNN_CHECK_NOTHROW(cudnnDestroyTensorDescriptor(d));
}
void release_filter(cudnnFilterDescriptor_t d) noexcept {
  TP_CUDNN_CHECK_NOTHROW(cudnnDestroyFilterDescriptor(d));
}
void release_conv(cudnnConvolutionDescriptor_t d) noexcept {
  TP_CUDNN_CHECK_NOTHROW(cudnnDestroyConvolutionDescriptor(d));
}
using CudnnHandle = UniqueHandle<cudnnHandle_t, release_cudnn>;
using TensorDesc = UniqueHandle<cudnnTensorDescriptor_t, release_tensor>;
using FilterDesc = UniqueHandle<cudnnFilterDescriptor_t, release_filter>;
using ConvDesc = UniqueHandle<cudnnConvolutionDescriptor_t, release_conv>;
}  // namespace

class CudnnContext {
 public:
  explicit CudnnContext(int device) {
    use_device(device);
    cudnnHandle_t handle = nullptr;
    TP_CUDNN_CHECK(cudnnCreate(&handle));
    handle_ = CudnnHandle(handle);
  }
  cudnnHandle_t get() const { return handle_.get(); }
  // Shared by every layer of the backend.
  CompileBudget& compile_budget() { return compile_budget_; }

 private:
  // Runtime-compiled plans a calibration may build: the default GPU suite's depthwise layers
  // take 39 (a quarter of a second each on an H200).
  static constexpr int kCompiledPlans = 64;
  CudnnHandle handle_;
  CompileBudget compile_budget_{kCompiledPlans};
};

std::shared_ptr<CudnnContext> make_cudnn_context(int device) {
  return std::make_shared<CudnnContext>(device);
}

std::optional<std::string> cudnn_version() {
  const std::size_t v = cudnnGetVersion();  // 91900 = 9.19.0
  return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
}

namespace {

constexpr int kMaxSets = 64;
constexpr int kCheckSamples = 256;
constexpr double kTargetSampleS = 200e-6;
constexpr std::size_t kCandidates = 8;  // of each API's list, the first that fit are timed
constexpr double kCandidateS = 1e-3;    // each candidate: two batches of calls this long

struct ConvTypes {
  cudnnDataType_t data;
  Elem elem;
  int bytes;
  cudnnMathType_t math;
  double out_rel_tol, sum_rel_tol;
};

ConvTypes conv_types(DType dtype) {
  switch (dtype) {
    // Winograd and FFT algorithms round more than a direct sum: hence 1e-3 for f32.
    case DType::f32:
      return {CUDNN_DATA_FLOAT, Elem::f32, 4, CUDNN_FMA_MATH, 1e-6, 1e-3};
    case DType::f16:
      return {CUDNN_DATA_HALF, Elem::f16, 2, CUDNN_TENSOR_OP_MATH, 2e-3, 2e-3};
    case DType::bf16:
      return {CUDNN_DATA_BFLOAT16, Elem::bf16, 2, CUDNN_TENSOR_OP_MATH, 8e-3, 4e-3};
    default:
      throw Unsupported(fmt::format("cuDNN convolution is measured in f32, f16 and bf16, not {}",
                                    to_string(dtype)));
  }
}

class ConvKernel final : public Kernel {
 public:
  ConvKernel(const DeviceFacts& device, std::shared_ptr<CudnnContext> cudnn, const ConvShape& shape,
             ConvLayout layout)
      : device_(device.index),
        cudnn_(std::move(cudnn)),
        shape_(shape),
        types_(conv_types(shape.dtype)),
        nhwc_(layout != ConvLayout::nchw) {
    if (shape.groups <= 0 || shape.c % shape.groups != 0 || shape.k % shape.groups != 0)
      throw InputError(fmt::format("conv {}: channels must divide into the groups", shape.str()));
    if (layout == ConvLayout::blocked)
      throw Unsupported("cuDNN convolution runs NHWC or NCHW tensors, not channel-blocked ones");
    if (shape.dtype == DType::bf16 && device.cc() < 80)
      throw Unsupported(
          fmt::format("bf16 convolution needs compute capability 8.0 or newer; {} has {}.{}",
                      device.name, device.cc_major, device.cc_minor));
    use_device(device_);
    stream_ = make_stream();
    timer_.emplace();
    const cudnnTensorFormat_t format = nhwc_ ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    const auto i32 = [](std::int64_t v) { return static_cast<int>(v); };

    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    TP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
    x_desc_ = TensorDesc(x);
    TP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
    y_desc_ = TensorDesc(y);
    TP_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
    w_desc_ = FilterDesc(w);
    TP_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    conv_desc_ = ConvDesc(conv);
    TP_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x, format, types_.data, i32(shape.n), i32(shape.c),
                                              i32(shape.h), i32(shape.w)));
    TP_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, types_.data, format, i32(shape.k),
                                              i32(shape.c / shape.groups), i32(shape.r),
                                              i32(shape.s)));
    TP_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        conv, i32(shape.pad), i32(shape.pad), i32(shape.stride), i32(shape.stride),
        i32(shape.dilation), i32(shape.dilation), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    TP_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv, i32(shape.groups)));
    TP_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, types_.math));
    int on = 0, oc = 0, oh = 0, ow = 0;
    TP_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &on, &oc, &oh, &ow));
    if (oh != shape.out_h() || ow != shape.out_w() || oc != shape.k)
      throw Error(fmt::format("conv {}: cuDNN's output is {}x{}x{}, the shape says {}x{}x{}",
                              shape.str(), oc, oh, ow, shape.k, shape.out_h(), shape.out_w()));
    TP_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y, format, types_.data, on, oc, oh, ow));

    x_elems_ = shape.n * shape.c * shape.h * shape.w;
    w_elems_ = shape.k * (shape.c / shape.groups) * shape.r * shape.s;
    y_elems_ = shape.n * shape.k * shape.out_h() * shape.out_w();
    const std::int64_t set_bytes = round_up(x_elems_ * types_.bytes) +
                                   round_up(w_elems_ * types_.bytes) +
                                   round_up(y_elems_ * types_.bytes);
    const std::int64_t usable = usable_device_bytes();
    // Workspace: what the chosen algorithm needs, within a quarter of the free memory.
    const std::int64_t workspace_limit = std::min<std::int64_t>(usable / 4, 4 * kGiB);
    choose_algorithm(workspace_limit);

    std::int64_t sets =
        std::clamp<std::int64_t>((2 * device.l2_bytes + set_bytes - 1) / set_bytes, 1, kMaxSets);
    sets = std::min<std::int64_t>(sets, (usable - workspace_bytes_) / set_bytes);
    if (sets < 1) require_device_bytes(set_bytes + workspace_bytes_, name());
    sets_ = static_cast<int>(sets);
    x_stride_ = round_up(x_elems_ * types_.bytes);
    w_stride_ = round_up(w_elems_ * types_.bytes);
    y_stride_ = round_up(y_elems_ * types_.bytes);
    x_ = make_device_buffer(x_stride_ * sets_);
    w_ = make_device_buffer(w_stride_ * sets_);
    y_ = make_device_buffer(y_stride_ * sets_);
    if (workspace_bytes_ > 0) workspace_ = make_device_buffer(workspace_bytes_);
    fill_random(x_.get(), types_.elem, x_stride_ * sets_ / types_.bytes, 61, stream_.get());
    fill_random(w_.get(), types_.elem, w_stride_ * sets_ / types_.bytes, 62, stream_.get());
    fill_random(y_.get(), types_.elem, y_stride_ * sets_ / types_.bytes, 63, stream_.get());

    time_candidates();
    choose(order_.front());
  }

  std::string name() const override { return "conv " + shape_.str() + (nhwc_ ? " nhwc" : " nchw"); }
  double flops() const override { return shape_.flops(); }
  double bytes() const override { return shape_.bytes(); }
  std::string impl() const override {
    return fmt::format("{} sets={} inner={}", impl_, sets_, inner_);
  }
  std::string layout() const override { return nhwc_ ? "nhwc" : "nchw"; }

  // Every candidate that ran, against the reference: the fastest that passes is kept.
  void check() override {
    use_device(device_);
    std::string failures;
    std::vector<std::size_t> passed;
    int graph_passed = 0;
    for (const std::size_t i : order_) {
      choose(i);
      try {
        check_chosen();
        passed.push_back(i);
        if (!candidates_[i].legacy) ++graph_passed;
      } catch (const CheckFailed& e) {
        failures += fmt::format(" {} ({});", candidates_[i].name, e.what());
      }
    }
    if (passed.empty())
      throw CheckFailed(fmt::format("{}: no candidate passed the check:{}", name(), failures));
    timed_ += fmt::format(" checked: {} passed ({} graph){};", passed.size(), graph_passed,
                          failures.empty() ? "" : ", failed:" + failures);
    choose(passed.front());
  }

  double run_s() override {
    use_device(device_);
    timer_->start(stream_.get());
    for (int i = 0; i < inner_; ++i) {
      next_set_ = (next_set_ + 1) % sets_;
      TP_CUDNN_CHECK(forward(candidates_[*chosen_], next_set_));
    }
    timer_->stop(stream_.get());
    return timer_->elapsed_s() / inner_;
  }

 private:
  static std::int64_t round_up(std::int64_t bytes) { return (bytes + 255) / 256 * 256; }

  // The chosen candidate on buffer set 0 against the reference, on sampled outputs.
  void check_chosen() {
    TP_CUDNN_CHECK(forward(candidates_[*chosen_], 0));
    std::mt19937_64 rng(0xc0de);
    const std::int64_t oh = shape_.out_h(), ow = shape_.out_w();
    std::vector<std::int64_t> samples = {0, 0, 0, 0, shape_.n - 1, shape_.k - 1, oh - 1, ow - 1};
    for (int s = 0; s < kCheckSamples; ++s)
      for (std::int64_t extent : {shape_.n, shape_.k, oh, ow})
        samples.push_back(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(extent)));
    const int count = static_cast<int>(samples.size() / 4);
    DeviceBuffer samples_dev =
        make_device_buffer(static_cast<std::int64_t>(samples.size() * sizeof(std::int64_t)));
    DeviceBuffer results_dev =
        make_device_buffer(count * static_cast<std::int64_t>(sizeof(GemmSampleResult)));
    TP_CUDA_CHECK(cudaMemcpyAsync(samples_dev.get(), samples.data(),
                                  samples.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice,
                                  stream_.get()));
    const ConvDims dims{
        shape_.n, shape_.c, shape_.h,      shape_.w,   shape_.k,        shape_.r,      shape_.s,
        oh,       ow,       shape_.stride, shape_.pad, shape_.dilation, shape_.groups, nhwc_};
    conv_reference(types_.elem, x_.get(), w_.get(), y_.get(), dims, samples_dev.as<std::int64_t>(),
                   count, results_dev.as<GemmSampleResult>(), stream_.get());
    std::vector<GemmSampleResult> results(count);
    TP_CUDA_CHECK(cudaMemcpyAsync(results.data(), results_dev.get(),
                                  count * sizeof(GemmSampleResult), cudaMemcpyDeviceToHost,
                                  stream_.get()));
    TP_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    for (int s = 0; s < count; ++s) {
      const auto& r = results[s];
      const double tol =
          types_.out_rel_tol * std::fabs(r.reference) + types_.sum_rel_tol * r.abs_sum + 1e-6;
      if (!(std::fabs(r.got - r.reference) <= tol))
        throw CheckFailed(fmt::format(
            "{}: y[n={}][k={}][{}][{}] = {} but the reference is {} (tolerance {:.3g}, {})", name(),
            samples[4 * s], samples[4 * s + 1], samples[4 * s + 2], samples[4 * s + 3], r.got,
            r.reference, tol, impl_));
    }
  }

  // A candidate: a graph-API plan (graph_index) or a legacy algorithm (legacy), with its
  // workspace.
  struct Candidate {
    std::optional<cudnnConvolutionFwdAlgoPerf_t> legacy;
    std::size_t graph_index = 0;
    std::int64_t workspace_bytes = 0;
    std::string name;
    double call_s = 0;  // seconds per call when timed; 0: it did not run
  };

  void choose_algorithm(std::int64_t workspace_limit) {
    // The graph API first: its engines are the ones frameworks run.
    try {
      graph_.emplace(cudnn_->get(), shape_, nhwc_, types_.data, workspace_limit, kCandidates,
                     cudnn_->compile_budget());
      for (std::size_t i = 0; i < graph_->plans().size(); ++i) {
        const GraphPlan& plan = graph_->plans()[i];
        candidates_.push_back({std::nullopt, i, plan.workspace_bytes, "graph " + plan.name});
      }
      if (!graph_->notes().empty()) notes_ += " graph: " + graph_->notes() + ";";
    } catch (const Error& e) {
      // The message ends with cuDNN's status name; the file and line of the call stay out.
      const std::string what = e.what();
      const auto status = what.rfind(": ");
      graph_.reset();
      notes_ += fmt::format(" graph API: no operation graph ({});",
                            status == std::string::npos ? what : what.substr(status + 2));
    }
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    int returned = 0;
    TP_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
        cudnn_->get(), x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(),
        static_cast<int>(perf.size()), &returned, perf.data()));
    std::size_t legacy = 0;
    for (int i = 0; i < returned && legacy < kCandidates; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      // The heuristic's `memory` is an estimate; the workspace an algorithm needs with the math
      // type it will run with comes from cudnnGetConvolutionForwardWorkspaceSize.
      TP_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_.get(), math_for(perf[i])));
      std::size_t needed = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(cudnn_->get(), x_desc_.get(), w_desc_.get(),
                                                  conv_desc_.get(), y_desc_.get(), perf[i].algo,
                                                  &needed) != CUDNN_STATUS_SUCCESS)
        continue;
      if (static_cast<std::int64_t>(needed) > workspace_limit) continue;
      candidates_.push_back({perf[i], 0, static_cast<std::int64_t>(needed),
                             fmt::format("algo={} math={}", static_cast<int>(perf[i].algo),
                                         static_cast<int>(math_for(perf[i])))});
      ++legacy;
    }
    for (const Candidate& candidate : candidates_)
      workspace_bytes_ = std::max(workspace_bytes_, candidate.workspace_bytes);
    if (candidates_.empty())
      throw Unsupported(fmt::format(
          "cuDNN has no forward engine or algorithm for conv {} in {} within {} of workspace;{}",
          shape_.str(), nhwc_ ? "NHWC" : "NCHW", format_bytes(static_cast<double>(workspace_limit)),
          notes_));
  }

  // Seconds per call of one candidate: one call sizes the batches, then the faster of two, each
  // call on the next buffer set in turn, as run_s does.
  double time_calls(const Candidate& candidate) {
    const auto call = [&] {
      next_set_ = (next_set_ + 1) % sets_;
      TP_CUDNN_CHECK(forward(candidate, next_set_));
    };
    const double estimate_s = fastest_batch_s(*timer_, stream_.get(), 1, 1, call);
    const int calls = static_cast<int>(std::clamp(std::ceil(kCandidateS / estimate_s), 1.0, 32.0));
    return fastest_batch_s(*timer_, stream_.get(), calls, 2, call);
  }

  // Heuristic orders are guesses, and on some parts a first choice is many times slower than
  // another candidate (1x1 and depthwise layers): every candidate that runs is timed, and order_
  // lists them fastest first.
  void time_candidates() {
    std::string failures;
    int timed_graph = 0, timed_legacy = 0;
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      Candidate& candidate = candidates_[i];
      use(candidate);
      const cudnnStatus_t status = forward(candidate, 0);
      if (status != CUDNN_STATUS_SUCCESS) {
        failures += fmt::format(" {}: {};", candidate.name, cudnnGetErrorString(status));
        continue;
      }
      ++(candidate.legacy ? timed_legacy : timed_graph);
      candidate.call_s = time_calls(candidate);
      order_.push_back(i);
    }
    if (order_.empty())
      throw Unsupported(fmt::format("no cuDNN engine or algorithm ran conv {}:{}{}", shape_.str(),
                                    failures, notes_));
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
      return candidates_[a].call_s < candidates_[b].call_s;
    });
    timed_ = fmt::format("timed {} graph + {} legacy;{}", timed_graph, timed_legacy, notes_);
  }

  // Makes candidate `i` the one that runs, with its math type, and sizes the timed batches to it.
  void choose(std::size_t i) {
    chosen_ = i;
    const Candidate& c = candidates_[i];
    use(c);
    inner_ = static_cast<int>(std::clamp(std::ceil(kTargetSampleS / c.call_s), 1.0, 64.0));
    impl_ = fmt::format("cudnn {} workspace={}; {}", c.name,
                        format_bytes(static_cast<double>(c.workspace_bytes)), timed_);
  }

  // The legacy API's math type lives in the shared convolution descriptor: set once for the
  // candidate about to run, not in every call.
  void use(const Candidate& candidate) {
    if (candidate.legacy)
      TP_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_.get(), math_for(*candidate.legacy)));
  }

  // f32 stays f32 (FMA math, never TF32); the others take the math the heuristic chose.
  cudnnMathType_t math_for(const cudnnConvolutionFwdAlgoPerf_t& perf) const {
    return shape_.dtype == DType::f32 ? CUDNN_FMA_MATH : perf.mathType;
  }

  cudnnStatus_t forward(const Candidate& candidate, int set) {
    TP_CUDNN_CHECK(cudnnSetStream(cudnn_->get(), stream_.get()));
    auto* x = static_cast<char*>(x_.get()) + set * x_stride_;
    auto* w = static_cast<char*>(w_.get()) + set * w_stride_;
    auto* y = static_cast<char*>(y_.get()) + set * y_stride_;
    if (!candidate.legacy) return graph_->execute(candidate.graph_index, x, w, y, workspace_.get());
    const float alpha = 1.0f, beta = 0.0f;
    return cudnnConvolutionForward(cudnn_->get(), &alpha, x_desc_.get(), x, w_desc_.get(), w,
                                   conv_desc_.get(), candidate.legacy->algo, workspace_.get(),
                                   static_cast<std::size_t>(workspace_bytes_), &beta, y_desc_.get(),
                                   y);
  }

  int device_;
  std::shared_ptr<CudnnContext> cudnn_;
  ConvShape shape_;
  ConvTypes types_;
  bool nhwc_;
  Stream stream_;
  std::optional<EventTimer> timer_;
  TensorDesc x_desc_, y_desc_;
  FilterDesc w_desc_;
  ConvDesc conv_desc_;
  std::optional<GraphConv> graph_;
  std::vector<Candidate> candidates_;
  std::vector<std::size_t> order_;  // the candidates that ran, fastest first
  std::optional<std::size_t> chosen_;
  std::string impl_, notes_, timed_;  // notes_: what was left out of the candidates, and why
  std::int64_t x_elems_ = 0, w_elems_ = 0, y_elems_ = 0;
  std::int64_t x_stride_ = 0, w_stride_ = 0, y_stride_ = 0;
  std::int64_t workspace_bytes_ = 0;
  int sets_ = 1, next_set_ = 0, inner_ = 1;
  DeviceBuffer x_, w_, y_, workspace_;
};

}  // namespace

std::unique_ptr<Kernel> make_conv_kernel(const DeviceFacts& device,
                                         std::shared_ptr<CudnnContext> cudnn,
                                         const ConvShape& shape, ConvLayout layout) {
  return std::make_unique<ConvKernel>(device, std::move(cudnn), shape, layout);
}

}  // namespace truepeak::cuda_detail
