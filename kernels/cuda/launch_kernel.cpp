// Per-launch overhead: an empty kernel launched back to back, and the same launches replayed
// from a CUDA graph (per-node time).
#include <fmt/format.h>

#include <optional>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/cuda_owners.hpp"
#include "kernels/cuda/device_kernels.hpp"

namespace truepeak::cuda_detail {

namespace {

constexpr int kLaunches = 256;  // per sample: one launch is far below the event resolution

class LaunchKernel final : public Kernel {
 public:
  LaunchKernel(const DeviceFacts& device, bool from_graph)
      : device_(device.index), from_graph_(from_graph) {
    use_device(device_);
    stream_ = make_stream();
    timer_.emplace();
    if (from_graph_) {
      TP_CUDA_CHECK(cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < kLaunches; ++i) launch_empty(stream_.get());
      cudaGraph_t graph = nullptr;
      TP_CUDA_CHECK(cudaStreamEndCapture(stream_.get(), &graph));
      graph_ = Graph(graph);
      cudaGraphExec_t exec = nullptr;
      TP_CUDA_CHECK(cudaGraphInstantiate(&exec, graph_.get(), 0));
      exec_ = GraphExec(exec);
      TP_CUDA_CHECK(cudaGraphUpload(exec_.get(), stream_.get()));
    }
  }

  std::string name() const override {
    return from_graph_ ? "graph_launch empty kernel" : "launch empty kernel";
  }
  double flops() const override { return 0; }
  double bytes() const override { return 0; }
  std::string impl() const override {
    return fmt::format("{} empty kernels <<<1,1>>> per sample{}", kLaunches,
                       from_graph_ ? ", one CUDA graph" : ", back to back on one stream");
  }

  // An empty kernel has no output: the check is that every launch completes without an error.
  void check() override {
    use_device(device_);
    run();
    TP_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  double run_s() override {
    use_device(device_);
    timer_->start(stream_.get());
    run();
    timer_->stop(stream_.get());
    return timer_->elapsed_s() / kLaunches;
  }

 private:
  void run() {
    if (from_graph_) {
      TP_CUDA_CHECK(cudaGraphLaunch(exec_.get(), stream_.get()));
    } else {
      for (int i = 0; i < kLaunches; ++i) launch_empty(stream_.get());
    }
  }

  int device_;
  bool from_graph_;
  Stream stream_;
  std::optional<EventTimer> timer_;
  Graph graph_;
  GraphExec exec_;
};

}  // namespace

std::unique_ptr<Kernel> make_launch_kernel(const DeviceFacts& device, bool from_graph) {
  return std::make_unique<LaunchKernel>(device, from_graph);
}

}  // namespace truepeak::cuda_detail
