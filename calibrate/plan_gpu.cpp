// What a GPU calibration measures. Budgets are sized for --quick to take about a minute on an
// H200 (well under the two minutes the GPU check allows) and the default a few minutes; the
// points that decide the headline figures are in both: bf16 GEMM at 8192^3 and 16384^3, the HBM
// triad at a few GiB, pinned host-to-device copies of 256 MiB and 1 GiB.
#include <algorithm>
#include <string>

#include "calibrate/plan.hpp"
#include "calibrate/plan_common.hpp"
#include "core/units.hpp"

namespace truepeak {
namespace {

using plan_detail::rule;

// Compute capability x 10 from the description ("9.0" -> 90); 0 when absent.
int compute_capability(const DeviceDescription& device) {
  const auto it = device.properties.find("compute_capability");
  if (it == device.properties.end() || !it->is_string()) return 0;
  const std::string text = it->get<std::string>();
  const auto dot = text.find('.');
  try {
    const int major = std::stoi(text.substr(0, dot));
    const int minor = dot == std::string::npos ? 0 : std::stoi(text.substr(dot + 1));
    return major * 10 + minor;
  } catch (...) {
    return 0;
  }
}

std::int64_t l2_bytes(const DeviceDescription& device) {
  for (const auto& level : device.levels)
    if (level.name == "L2" && level.bytes) return *level.bytes;
  return 4 * kMiB;  // the smallest L2 of a current GPU: keeps the sweep sensible
}

std::int64_t round_to(std::int64_t bytes, std::int64_t unit) {
  return std::max(unit, (bytes + unit - 1) / unit * unit);
}

// The generic convolution grid (plan_common.hpp), at batch `n`: the main families' layers on
// their middle lines and the image stems (`others`: the other families' representatives
// instead). The quick suite: the expanding 1x1, the 3x3 and the depthwise 3x3 representatives
// and the 7x7 stem.
std::vector<ConvShape> grid_layers(DType dtype, std::int64_t n, bool quick, bool others = false) {
  std::vector<ConvShape> layers;
  for (const auto& family : plan_detail::conv_families()) {
    if (quick) {
      if (family.name == "1x1x4" || family.name == "3x3" || family.name == "dw3x3")
        layers.push_back(plan_detail::grid_representative(dtype, family));
    } else if (others && !family.main) {
      layers.push_back(plan_detail::grid_representative(dtype, family));
    } else if (!others && family.main) {
      const auto line =
          plan_detail::grid_line_layers(dtype, family, plan_detail::grid_middle_line(family));
      layers.insert(layers.end(), line.begin(), line.end());
    }
  }
  const auto stems = plan_detail::image_stems(dtype);
  if (quick)
    layers.push_back(stems.back());
  else if (!others)
    layers.insert(layers.end(), stems.begin(), stems.end());
  for (auto& layer : layers) layer.n = n;
  return layers;
}

ConvShape grid_3x3(DType dtype, std::int64_t n) {
  ConvShape shape;
  for (const auto& family : plan_detail::conv_families())
    if (family.name == "3x3") shape = plan_detail::grid_representative(dtype, family);
  shape.n = n;
  return shape;
}

// Per dtype: squares first (the dtype's peak and efficiency curve), then skinny products, small
// K and strided-batched shapes, all of powers of two (every one meets cuBLASLt's fp8/int8
// alignment rules: k a multiple of 16). The driver tries every shape; one it cannot run is listed
// as skipped.
void add_gemms(std::vector<GemmShape>& out, DType dtype, bool quick) {
  const auto add = [&](std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1) {
    out.push_back(GemmShape{dtype, m, n, k, batch});
  };
  const bool headline = dtype == DType::bf16;  // the dtype the bars and estimators care most about
  const bool low_precision = dtype == DType::fp8_e4m3 || dtype == DType::int8;
  // Attention-like strided batches over a lattice of batch x heads {16, 64, 256}, head widths
  // {32, 64, 128} and tokens {256, 1024, 4096}, each value of each ladder once (a Latin square),
  // the longest sequence with the fewest products: a prefill's scores (T x T x width) and
  // context (T x width x T).
  struct Attention {
    std::int64_t batch, tokens, width;
  };
  const std::vector<Attention> attention = {{16, 4096, 64}, {64, 1024, 128}, {256, 256, 32}};
  if (quick) {
    if (headline) {
      for (const std::int64_t size : {1024, 4096, 8192, 16384}) add(size, size, size);
      add(1, 8192, 8192);
      add(16, 8192, 8192);
      add(4096, 4096, 128);
      add(attention[1].tokens, attention[1].tokens, attention[1].width, attention[1].batch);
      add(8192, 30001, 1024);  // rows not 16-byte aligned
    } else {
      for (const std::int64_t size : {4096, 8192}) add(size, size, size);
    }
    return;
  }
  for (const std::int64_t size : {256, 512, 1024, 2048, 4096, 8192, 16384}) add(size, size, size);
  // Skinny to square: rows (a step's tokens) a factor of 4 apart against weights on a lattice of
  // powers of two: rows 1, 16 and 256 take 4096 x 4096 and 16384 x 4096, rows 4 and 64 take
  // 8192 x 8192 and 4096 x 16384, so that the two sets interleave. The 32-bit types, slower and
  // less used, rows 1 and 4.
  const bool wide_float = dtype == DType::f32 || dtype == DType::tf32;
  const std::vector<std::pair<std::int64_t, std::int64_t>> even = {{4096, 4096}, {16384, 4096}};
  const std::vector<std::pair<std::int64_t, std::int64_t>> odd = {{8192, 8192}, {4096, 16384}};
  for (const std::int64_t m :
       wide_float ? std::vector<std::int64_t>{1, 4} : std::vector<std::int64_t>{1, 4, 16, 64, 256})
    for (const auto& [n, k] : m == 4 || m == 64 ? odd : even) add(m, n, k);
  if (!low_precision) {
    add(4096, 4096, 64);
    add(4096, 4096, 256);
  }
  for (const auto& a : attention) {
    add(a.tokens, a.tokens, a.width, a.batch);
    add(a.tokens, a.width, a.tokens, a.batch);
  }
  // Rows that are not 16-byte aligned (an odd n: the output's rows), which cuBLASLt runs in
  // kernels of their own, several times slower: a vocabulary head of an odd size is such a
  // product. fp8 and int8 need aligned rows.
  if (!low_precision) {
    for (const std::int64_t m : {64, 1024, 8192}) add(m, 30001, 1024);
    add(4096, 4095, 4096);
  }
}

}  // namespace

Plan gpu_plan(const DeviceDescription& device, Suite suite) {
  const bool quick = suite == Suite::quick;
  const int cc = compute_capability(device);
  const std::int64_t memory = device.memory_bytes.value_or(16 * kGiB);
  Plan plan;

  // bf16 first: it is the headline figure, and the GPU's clocks have ramped by then.
  std::vector<DType> gemm_dtypes;
  if (cc >= 80) gemm_dtypes.push_back(DType::bf16);
  gemm_dtypes.push_back(DType::f16);
  if (cc >= 80) gemm_dtypes.push_back(DType::tf32);
  gemm_dtypes.push_back(DType::f32);
  if (cc >= 89) gemm_dtypes.push_back(DType::fp8_e4m3);
  gemm_dtypes.push_back(DType::int8);
  for (const DType dtype : gemm_dtypes) add_gemms(plan.gemm, dtype, quick);

  // Convolutions: NHWC (the tensor-core layout frameworks use with channels_last) and NCHW.
  if (quick) {
    for (const auto& shape : grid_layers(DType::f16, 32, true))
      plan.conv.push_back({shape, ConvLayout::nhwc});
    if (cc >= 80) plan.conv.push_back({grid_3x3(DType::bf16, 32), ConvLayout::nhwc});
    plan.conv.push_back({grid_3x3(DType::f16, 32), ConvLayout::nchw});
    plan.conv.push_back({grid_3x3(DType::f32, 32), ConvLayout::nchw});
  } else {
    std::vector<DType> conv_dtypes = {DType::f16};
    if (cc >= 80) conv_dtypes.push_back(DType::bf16);
    conv_dtypes.push_back(DType::f32);
    // NHWC (the tensor-core layout) first, then NCHW, which cuDNN may lack for the 16-bit types
    // (such a layer is listed as skipped). The other families' representatives in NHWC at the
    // larger batch only.
    for (const DType dtype : conv_dtypes) {
      for (const std::int64_t n : {1, 32})
        for (const auto& shape : grid_layers(dtype, n, false))
          plan.conv.push_back({shape, ConvLayout::nhwc});
      for (const auto& shape : grid_layers(dtype, 32, false, true))
        plan.conv.push_back({shape, ConvLayout::nhwc});
      for (const auto& shape : grid_layers(dtype, 128, true))
        plan.conv.push_back({shape, ConvLayout::nhwc});
      for (const auto& shape : grid_layers(dtype, 32, false))
        plan.conv.push_back({shape, ConvLayout::nchw});
    }
  }

  // Working-set sweep: from well inside L2 to 4x L2 and beyond (device memory), up to a few GiB.
  const std::int64_t l2 = l2_bytes(device);
  const std::int64_t max_stream = std::min<std::int64_t>(quick ? 4 * kGiB : 8 * kGiB, memory / 4);
  std::vector<std::int64_t> sizes;
  if (quick) {
    for (const std::int64_t divisor : {16, 4, 2})
      sizes.push_back(round_to(l2 / divisor, 64 * kKiB));
  } else {
    for (std::int64_t bytes = round_to(l2 / 64, 64 * kKiB); bytes <= 2 * l2; bytes *= 2)
      sizes.push_back(bytes);
  }
  sizes.push_back(round_to(4 * l2 + l2 / 4, kMiB));  // the first size that is device memory only
  for (const std::int64_t bytes : {kGiB, 2 * kGiB, 4 * kGiB, 8 * kGiB})
    if (bytes <= max_stream && bytes > sizes.back() && (!quick || bytes != 2 * kGiB))
      sizes.push_back(bytes);
  plan.stream_bytes = sizes;
  plan.stream_ops = quick ? std::vector<StreamOp>{StreamOp::copy, StreamOp::triad}
                          : std::vector<StreamOp>{StreamOp::copy, StreamOp::scale, StreamOp::add,
                                                  StreamOp::triad};
  plan.device_copy_bytes = {std::min<std::int64_t>(kGiB, memory / 8)};

  plan.fma_dtypes = {DType::f32, DType::f16, DType::f64};

  // Host<->device: 4 KiB (latency) to >= 1 GiB (bandwidth).
  plan.transfer_bytes =
      quick ? std::vector<std::int64_t>{4 * kKiB, 64 * kKiB, kMiB, 16 * kMiB, 256 * kMiB, kGiB}
            : std::vector<std::int64_t>{4 * kKiB,   16 * kKiB, 64 * kKiB, 256 * kKiB,
                                        kMiB,       4 * kMiB,  16 * kMiB, 64 * kMiB,
                                        256 * kMiB, kGiB,      2 * kGiB};
  plan.bidirectional_bytes = 256 * kMiB;

  // Warm-ups of 0.1-0.2 s let the clocks ramp before the first timed sample.
  if (quick) {
    plan.gemm_rule = rule(3, 0.4, 6, 2, 0.1);
    plan.conv_rule = rule(3, 0.25, 6, 2, 0.05);
    plan.stream_rule = rule(5, 0.25, 8, 2, 0.02);
    plan.fma_rule = rule(5, 0.3, 8, 2, 0.1);
    plan.overhead_rule = rule(20, 0.1, 20, 5, 0.01);
    plan.transfer_rule = rule(3, 0.3, 6, 1, 0.0);
  } else {
    plan.gemm_rule = rule(5, 1.0, 10, 3, 0.2);
    plan.conv_rule = rule(5, 0.5, 10, 2, 0.05);
    plan.stream_rule = rule(10, 0.5, 12, 2, 0.02);
    plan.fma_rule = rule(10, 1.0, 15, 3, 0.2);
    plan.overhead_rule = rule(100, 0.5, 50, 10, 0.02);
    plan.transfer_rule = rule(5, 0.75, 8, 1, 0.0);
  }
  // The sentinel (about 0.2 ms) runs between points: a few samples, no long warm-up.
  plan.sentinel_rule = rule(3, 0.01, 0, 1, 0.0);
  plan.max_remeasure = quick ? 1 : 2;
  return plan;
}

}  // namespace truepeak
