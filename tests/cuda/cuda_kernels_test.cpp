// Every CUDA kernel on tiny problems: set-up, output check and one timed run. Skipped without a
// GPU.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/units.hpp"
#include "kernels/cuda/cuda_backend.hpp"

namespace truepeak {
namespace {

class CudaKernels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const CudaDeviceCount devices = cuda_device_count();
    if (devices.count > 0) {
      backend_ = make_cuda_backend(0).release();
    } else {
      reason_ = devices.reason;
    }
  }
  static void TearDownTestSuite() {
    delete backend_;
    backend_ = nullptr;
  }
  void SetUp() override {
    if (backend_ == nullptr) GTEST_SKIP() << "no CUDA device: " << reason_;
  }
  static int cc() {
    const std::string text =
        backend_->describe().properties.at("compute_capability").get<std::string>();
    return std::stoi(text.substr(0, text.find('.'))) * 10 +
           std::stoi(text.substr(text.find('.') + 1));
  }
  // check() passes and one run takes a positive time.
  static void exercise(Kernel& kernel) {
    SCOPED_TRACE(kernel.name());
    EXPECT_NO_THROW(kernel.check());
    const double time_s = kernel.run_s();
    EXPECT_GT(time_s, 0);
    EXPECT_LT(time_s, 10);
  }

  static inline Backend* backend_ = nullptr;
  static inline std::string reason_;
};

TEST_F(CudaKernels, DescribesTheDevice) {
  const auto& d = backend_->describe();
  EXPECT_EQ(d.id, "cuda:0");
  EXPECT_EQ(d.kind, "gpu");
  EXPECT_FALSE(d.name.empty());
  for (const char* key : {"cuda_runtime", "cublas", "driver", "cudnn"})
    EXPECT_TRUE(d.libraries.contains(key)) << key;
  for (const char* key : {"compute_capability", "sms", "l2_bytes", "memory_bus_width_bits",
                          "pcie_generation", "pcie_width", "pcie_link_Bps"})
    EXPECT_TRUE(d.properties.contains(key)) << key;
  ASSERT_EQ(d.levels.size(), 2u);
  EXPECT_EQ(d.levels[0].name, "L2");
  EXPECT_GT(*d.levels[0].bytes, 0);
  EXPECT_TRUE(d.levels[1].name == "HBM" || d.levels[1].name == "DRAM");
  EXPECT_EQ(d.levels[1].bytes, d.memory_bytes);
}

TEST_F(CudaKernels, GemmEveryDtype) {
  for (const DType dtype :
       {DType::f32, DType::tf32, DType::f16, DType::bf16, DType::fp8_e4m3, DType::int8}) {
    for (const GemmShape shape :
         {GemmShape{dtype, 64, 128, 256, 1}, GemmShape{dtype, 16, 256, 512, 3},
          GemmShape{dtype, 1, 1024, 1024, 1}}) {
      SCOPED_TRACE(shape.str());
      const bool needs_ampere = dtype == DType::tf32 || dtype == DType::bf16;
      if ((dtype == DType::fp8_e4m3 && cc() < 89) || (needs_ampere && cc() < 80)) {
        EXPECT_THROW(backend_->gemm(shape), Unsupported);
        continue;
      }
      try {
        auto kernel = backend_->gemm(shape);
        EXPECT_EQ(kernel->layout(), "tn");
        EXPECT_DOUBLE_EQ(kernel->flops(), shape.flops());
        exercise(*kernel);
      } catch (const Unsupported& e) {
        // cuBLASLt may lack a kernel for a decode-like fp8/int8 shape; every other must run.
        EXPECT_EQ(shape.m, 1) << e.what();
      }
    }
  }
}

// Where NVML is there (it gave the maximum clock), a GEMM and an FMA point say what clock and
// power their fastest sample ran at.
TEST_F(CudaKernels, FastestSampleCarriesTheGpuState) {
  if (backend_->describe().properties.at("max_sm_clock_mhz").is_null())
    GTEST_SKIP() << "no NVML on this machine";
  auto gemm = backend_->gemm(GemmShape{DType::f32, 256, 256, 256, 1});
  auto fma = backend_->fma(DType::f32);
  for (Kernel* kernel : {gemm.get(), fma.get()}) {
    SCOPED_TRACE(kernel->name());
    EXPECT_EQ(kernel->impl().find("at the fastest sample"), std::string::npos) << kernel->impl();
    kernel->run_s();
    EXPECT_NE(kernel->impl().find("at the fastest sample: sm "), std::string::npos)
        << kernel->impl();
  }
}

TEST_F(CudaKernels, ConvEveryDtypeAndLayout) {
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    if (dtype == DType::bf16 && cc() < 80) continue;
    for (const ConvLayout layout : {ConvLayout::nhwc, ConvLayout::nchw}) {
      ConvShape dense{dtype, 2, 16, 12, 12, 32, 3, 3, 1, 1, 1, 1};
      ConvShape depthwise{dtype, 2, 32, 10, 10, 32, 3, 3, 2, 1, 1, 32};
      for (const ConvShape& shape : {dense, depthwise}) {
        SCOPED_TRACE(shape.str());
        try {
          auto kernel = backend_->conv(shape, layout);
          EXPECT_EQ(kernel->layout(), layout == ConvLayout::nhwc ? "nhwc" : "nchw");
          exercise(*kernel);
          // Every candidate that ran was checked against the reference. The graph API's engines
          // are candidates beside the legacy algorithms: a dense 16-bit NHWC layer, the
          // frameworks' tensor-core case, must have some that computed it right.
          const std::string impl = kernel->impl();
          EXPECT_NE(impl.find("checked: "), std::string::npos) << impl;
          if (layout == ConvLayout::nhwc && dtype != DType::f32 && shape.groups == 1) {
            EXPECT_EQ(impl.find("timed 0 graph"), std::string::npos) << impl;
            EXPECT_EQ(impl.find("(0 graph)"), std::string::npos) << impl;
          }
        } catch (const Unsupported& e) {
          // cuDNN's bf16 kernels are NHWC; NCHW bf16 may have none. Everything else must run.
          if (!(dtype == DType::bf16 && layout == ConvLayout::nchw)) ADD_FAILURE() << e.what();
        }
      }
    }
  }
}

TEST_F(CudaKernels, StreamEveryOpAndDeviceCopy) {
  for (const StreamOp op : {StreamOp::copy, StreamOp::scale, StreamOp::add, StreamOp::triad}) {
    for (const std::int64_t bytes : {std::int64_t{96 * kKiB}, 48 * kMiB}) {
      auto kernel = backend_->stream(op, bytes);
      EXPECT_LE(kernel->bytes(), static_cast<double>(bytes));
      exercise(*kernel);
    }
  }
  EXPECT_THROW(backend_->stream(StreamOp::update, 48 * kMiB), Unsupported);  // the CPU's in-place sweep
  auto copy = backend_->device_copy(16 * kMiB);
  EXPECT_DOUBLE_EQ(copy->bytes(), 2.0 * 16 * kMiB);
  exercise(*copy);
}

TEST_F(CudaKernels, FmaEveryDtype) {
  for (const DType dtype : {DType::f32, DType::f16, DType::f64}) {
    auto kernel = backend_->fma(dtype);
    EXPECT_GT(kernel->flops(), 0);
    exercise(*kernel);
  }
  EXPECT_THROW(backend_->fma(DType::int8), Unsupported);
}

TEST_F(CudaKernels, LaunchOverheadAndSentinel) {
  exercise(*backend_->tiny_op());
  exercise(*backend_->graph_tiny_op());
  exercise(*backend_->sentinel());
}

TEST_F(CudaKernels, Transfers) {
  for (const TransferDir dir : {TransferDir::h2d, TransferDir::d2h})
    for (const bool pinned : {true, false})
      for (const std::int64_t bytes : {std::int64_t{4 * kKiB}, 3 * kMiB + 5}) {
        auto kernel = backend_->transfer(dir, pinned, bytes);
        EXPECT_DOUBLE_EQ(kernel->bytes(), static_cast<double>(bytes));
        exercise(*kernel);
      }
  auto both = backend_->transfer_bidirectional(8 * kMiB);
  EXPECT_DOUBLE_EQ(both->bytes(), 2.0 * 8 * kMiB);
  exercise(*both);
}

TEST_F(CudaKernels, ProblemsThatDoNotFitAreUnsupported) {
  const std::int64_t too_big = *backend_->describe().memory_bytes * 2;
  EXPECT_THROW(backend_->stream(StreamOp::triad, too_big), Unsupported);
  EXPECT_THROW(backend_->transfer(TransferDir::h2d, true, too_big / 2 + kGiB), Unsupported);
}

}  // namespace
}  // namespace truepeak
