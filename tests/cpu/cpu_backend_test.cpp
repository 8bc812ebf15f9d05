// Tiny real runs of every CPU kernel: each is checked against its reference, runs, and declares
// the right work. No timing thresholds.
#include "kernels/cpu/cpu_backend.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>

#include "core/error.hpp"

namespace truepeak {
namespace {

class CpuBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backend_ = make_cpu_backend({}).release(); }
  static void TearDownTestSuite() {
    delete backend_;
    backend_ = nullptr;
  }
  static Backend& backend() { return *backend_; }

  // oneDNN 2.6 runs bf16 from AVX-512 on; capped below it (ONEDNN_MAX_CPU_ISA=AVX2), it has no bf16
  // matmul or convolution, and only some bf16 elementwise ops.
  static bool onednn_has_bf16() {
    const auto& p = backend().describe().properties;
    return p.contains("onednn_isa") && p["onednn_isa"].is_string() &&
           p["onednn_isa"].get<std::string>().rfind("avx512", 0) == 0;
  }

  // Runs a kernel the way the driver does: check, then time.
  static void exercise(Kernel& kernel) {
    EXPECT_NO_THROW(kernel.check()) << kernel.name();
    const double time_s = kernel.run_s();
    EXPECT_GT(time_s, 0.0) << kernel.name();
    EXPECT_FALSE(kernel.name().empty());
  }

 private:
  static inline Backend* backend_ = nullptr;
};

#ifdef TRUEPEAK_HAVE_ONEDNN
constexpr bool kHaveOnednn = true;
#else
constexpr bool kHaveOnednn = false;
#endif

TEST_F(CpuBackendTest, DescribesTheCpu) {
  const auto& d = backend().describe();
  EXPECT_EQ(d.id, "cpu");
  EXPECT_EQ(d.kind, "cpu");
  EXPECT_FALSE(d.name.empty());
  ASSERT_FALSE(d.levels.empty());
  EXPECT_EQ(d.levels.back().name, "DRAM");
  EXPECT_EQ(d.levels.front().name, "L1");
  for (std::size_t i = 0; i + 1 < d.levels.size(); ++i) {
    ASSERT_TRUE(d.levels[i].bytes.has_value());
    EXPECT_GT(*d.levels[i].bytes, 0);
  }
  EXPECT_GE(d.properties.at("threads").get<int>(), 1);
  EXPECT_GE(d.properties.at("cores").get<int>(), 1);
  EXPECT_TRUE(d.properties.at("isa").contains("avx512f"));
  EXPECT_TRUE(d.properties.at("caches").is_array());
  if (kHaveOnednn) {
    EXPECT_EQ(d.libraries.at("onednn").get<std::string>().substr(0, 2), "2.");
  }
}

TEST_F(CpuBackendTest, GemmEachDtype) {
  for (const DType dtype : {DType::f32, DType::bf16, DType::int8}) {
    for (const std::int64_t batch : {1, 3}) {
      const GemmShape shape{dtype, 17, 40, 24, batch};
      try {
        auto kernel = backend().gemm(shape);
        exercise(*kernel);
        EXPECT_DOUBLE_EQ(kernel->flops(), 2.0 * batch * 17 * 40 * 24);
        EXPECT_DOUBLE_EQ(kernel->bytes(), shape.bytes());
        EXPECT_FALSE(kernel->impl().empty());
        EXPECT_FALSE(kernel->layout().empty());
      } catch (const Unsupported& e) {
        // Without oneDNN nothing runs; with it, only int8 may be missing on an older ISA, and bf16
        // below AVX-512.
        EXPECT_TRUE(!kHaveOnednn || dtype == DType::int8 || (dtype == DType::bf16 && !onednn_has_bf16()))
            << e.what();
      }
    }
  }
}

TEST_F(CpuBackendTest, GemmRejectsUnmeasuredDtype) {
  EXPECT_THROW(backend().gemm(GemmShape{DType::f16, 8, 8, 8, 1}), Unsupported);
}

TEST_F(CpuBackendTest, ConvShapesAndLayouts) {
  if (!kHaveOnednn) {
    EXPECT_THROW(backend().conv(ConvShape{}, ConvLayout::any), Unsupported);
    return;
  }
  struct Case {
    std::int64_t c, h, k, r, stride, pad, dilation, groups;
  };
  const Case cases[] = {
      {8, 9, 16, 3, 1, 1, 1, 1},    // 3x3
      {3, 15, 8, 7, 2, 3, 1, 1},    // stem-like 7x7/2
      {16, 8, 16, 3, 1, 1, 1, 16},  // depthwise
      {8, 10, 8, 3, 2, 2, 2, 2},    // grouped, strided, dilated
      {16, 6, 32, 1, 1, 0, 1, 1},   // 1x1
      {144, 7, 24, 1, 1, 0, 1, 1},  // 1x1 whose outputs do not fill whole blocks
  };
  for (const DType dtype : {DType::f32, DType::bf16}) {
    for (const ConvLayout layout :
         {ConvLayout::any, ConvLayout::nhwc, ConvLayout::nchw, ConvLayout::blocked}) {
      for (const Case& c : cases) {
        ConvShape shape;
        shape.dtype = dtype;
        shape.n = 2, shape.c = c.c, shape.h = c.h, shape.w = c.h + 1, shape.k = c.k;
        shape.r = c.r, shape.s = c.r, shape.stride = c.stride, shape.pad = c.pad;
        shape.dilation = c.dilation, shape.groups = c.groups;
        if (dtype == DType::bf16 && !onednn_has_bf16()) {
          EXPECT_THROW(backend().conv(shape, layout), Unsupported) << shape.str();
          continue;
        }
        auto kernel = backend().conv(shape, layout);
        exercise(*kernel);
        EXPECT_DOUBLE_EQ(kernel->flops(), shape.flops());
        EXPECT_FALSE(kernel->impl().empty());
        const auto used = kernel->layout();
        EXPECT_TRUE(used == "blocked" || used == "nhwc" || used == "nchw") << used;
        if (layout == ConvLayout::nhwc) {
          EXPECT_EQ(used, "nhwc");
        }
        if (layout == ConvLayout::nchw) {
          EXPECT_EQ(used, "nchw");
        }
        if (layout == ConvLayout::blocked && c.k >= 16) {
          EXPECT_EQ(used, "blocked");  // 24 channels are padded to whole blocks
          if (c.groups == 1 && dtype == DType::f32) {  // on a vectorised implementation, not the reference one
            EXPECT_EQ(kernel->impl().rfind("ref", 0), std::string::npos) << shape.str() << " " << kernel->impl();
          }
        }
      }
    }
  }
}

TEST_F(CpuBackendTest, GemmWithColdWeightsIsCheckedAndSaysSo) {
  if (!kHaveOnednn) {
    EXPECT_THROW(backend().gemm_cold_weights(GemmShape{DType::f32, 1, 256, 512, 1}), Unsupported);
    return;
  }
  // Copies of B span eight times the largest cache; the product with the last copy is checked.
  for (const DType dtype : {DType::f32, DType::bf16}) {
    if (dtype == DType::bf16 && !onednn_has_bf16()) {
      EXPECT_THROW(backend().gemm_cold_weights(GemmShape{dtype, 1, 256, 512, 1}), Unsupported);
      continue;
    }
    auto kernel = backend().gemm_cold_weights(GemmShape{dtype, 1, 256, 512, 1});
    exercise(*kernel);
    EXPECT_NE(kernel->layout().find("cold weights"), std::string::npos) << kernel->layout();
  }
  EXPECT_EQ(backend().gemm(GemmShape{DType::f32, 1, 256, 512, 1})->layout().find("cold"),
            std::string::npos);
}

TEST_F(CpuBackendTest, ConvWithColdWeightsIsCheckedAndSaysSo) {
  const ConvShape shape = ConvShape::parse("f32_mb1ic64ih8oc64kh3ph1");
  if (!kHaveOnednn) {
    EXPECT_THROW(backend().conv_cold_weights(shape, ConvLayout::blocked), Unsupported);
    return;
  }
  // Copies of the reordered weights span eight times the largest cache; the output computed with the
  // last copy is checked against the reference.
  for (const DType dtype : {DType::f32, DType::bf16}) {
    ConvShape s = shape;
    s.dtype = dtype;
    if (dtype == DType::bf16 && !onednn_has_bf16()) {
      EXPECT_THROW(backend().conv_cold_weights(s, ConvLayout::blocked), Unsupported);
      continue;
    }
    auto kernel = backend().conv_cold_weights(s, ConvLayout::blocked);
    exercise(*kernel);
    EXPECT_NE(kernel->name().find("cold weights"), std::string::npos) << kernel->name();
    EXPECT_EQ(kernel->layout(), "blocked");
  }
  EXPECT_EQ(backend().conv(shape, ConvLayout::blocked)->name().find("cold"), std::string::npos);
}

TEST_F(CpuBackendTest, StreamEachOp) {
  for (const StreamOp op :
       {StreamOp::copy, StreamOp::scale, StreamOp::add, StreamOp::triad, StreamOp::update}) {
    for (const std::int64_t bytes : {std::int64_t{48} << 10, std::int64_t{6} << 20}) {
      auto kernel = backend().stream(op, bytes);
      exercise(*kernel);
      // Moved: arrays x elements x 8 bytes (twice for update, read and written back), within one
      // element per array of the request.
      const double moved = static_cast<double>(bytes) * stream_passes(op);
      EXPECT_LE(kernel->bytes(), moved);
      EXPECT_GT(kernel->bytes(), moved - 8.0 * stream_arrays(op) * stream_passes(op));
    }
  }
}

TEST_F(CpuBackendTest, UpdateWritesOverItsInputAndNamesItsWorkingSet) {
  auto kernel = backend().stream(StreamOp::update, std::int64_t{1} << 20);
  EXPECT_NE(kernel->name().find("update 1"), std::string::npos) << kernel->name();
  EXPECT_EQ(kernel->name().find(" nt"), std::string::npos);  // regular stores over the line read
  EXPECT_EQ(kernel->flops(), 0);
  // Any number of runs: each checks against the values it started from.
  for (int i = 0; i < 3; ++i) {
    EXPECT_NO_THROW(kernel->check());
    EXPECT_GT(kernel->run_s(), 0);
  }
}

TEST_F(CpuBackendTest, FmaTinyOpAndSentinel) {
  auto fma = backend().fma(DType::f32);
  exercise(*fma);
  EXPECT_GT(fma->flops(), 0.0);
  EXPECT_THROW(backend().fma(DType::f64), Unsupported);

  auto sentinel = backend().sentinel();
  exercise(*sentinel);
  // Short enough to run between every two points.
  EXPECT_LT(sentinel->flops(), 1e9);

  if (kHaveOnednn) {
    auto tiny = backend().tiny_op();
    exercise(*tiny);
  } else {
    EXPECT_THROW(backend().tiny_op(), Unsupported);
  }
}

TEST_F(CpuBackendTest, VectorOpsMatchTheirReference) {
  if (!kHaveOnednn) {
    EXPECT_THROW(backend().vector_op({"gelu", DType::f32, 8, 64}), Unsupported);
    return;
  }
  // The blocked tensors have the channel block of oneDNN's ISA here: 16 with AVX-512, 8 below it
  // (ONEDNN_MAX_CPU_ISA=AVX2 runs this test that way too).
  const std::int64_t block = cpu_channel_block(backend().describe().properties);
  const std::string blocked = fmt::format("aBcd{}b", block);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    for (const auto& op : vector_op_names()) {
      // add_padded's channels leave the last block half full.
      const std::int64_t rows = op == "add_padded" ? block + block / 2 : 64;
      const VectorOpShape shape{op, dtype, rows, 256};
      std::unique_ptr<Kernel> kernel;
      try {
        kernel = backend().vector_op(shape);
      } catch (const Unsupported& e) {
        EXPECT_TRUE(dtype == DType::bf16 && !onednn_has_bf16()) << e.what();
        // The reason names the op and oneDNN's ISA, without the build's paths.
        EXPECT_EQ(std::string(e.what()).rfind("vector_op " + shape.str() + ": oneDNN ", 0), 0u) << e.what();
        EXPECT_EQ(std::string(e.what()).find('/'), std::string::npos) << e.what();
        continue;
      }
      exercise(*kernel);
      EXPECT_EQ(kernel->name(), "vector_op " + shape.str());
      const double tensors = op == "add" || op == "add_padded" ? 3 : 2;  // an add reads two
      EXPECT_DOUBLE_EQ(kernel->bytes(), tensors * rows * 256 * dtype_bytes(dtype));
      EXPECT_FALSE(kernel->impl().empty());
    }
  }
  EXPECT_THROW(backend().vector_op({"add_padded", DType::f32, 2 * block, 64}), InputError);
  EXPECT_EQ(backend().vector_op({"add_padded", DType::f32, 2 * block + block / 2, 64})->layout(), blocked);
  EXPECT_THROW(backend().vector_op({"erf", DType::f32, 8, 64}), Unsupported);
  EXPECT_THROW(backend().vector_op({"gelu", DType::f32, 0, 64}), InputError);
  // A reorder's channels fill whole blocks.
  EXPECT_THROW(backend().vector_op({"reorder_plain", DType::f32, block + block / 2, 64}), InputError);
  EXPECT_EQ(backend().vector_op({"reorder_blocked", DType::f32, 32, 64})->layout(), "abcd->" + blocked);
  EXPECT_EQ(backend().vector_op({"reorder_plain", DType::f32, 32, 64})->layout(), blocked + "->abcd");
}

TEST_F(CpuBackendTest, TransfersAreUnsupported) {
  EXPECT_THROW(backend().transfer(TransferDir::h2d, true, 1 << 20), Unsupported);
  EXPECT_THROW(backend().device_copy(1 << 20), Unsupported);
  EXPECT_THROW(backend().graph_tiny_op(), Unsupported);
}

}  // namespace
}  // namespace truepeak
