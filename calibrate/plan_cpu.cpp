// What a CPU calibration measures, and how long it may spend on each point. Budgets are sized for
// the whole CPU run to take <= 30 s (--quick) or <= 3 min (default) on a 2-core machine; the
// points that decide the headline peaks (large GEMMs, DRAM triad, FMA) get the most samples,
// because on a shared machine only a best-of-many figure is stable from run to run. The GEMM and
// convolution shapes are a generic grid (docs/calibration-grid.md): no shape is sized after a
// named model.
#include <algorithm>

#include "calibrate/plan.hpp"
#include "calibrate/plan_common.hpp"
#include "core/units.hpp"

namespace truepeak {
namespace {

using plan_detail::conv;
using plan_detail::rule;

// Every layer of the grid's families (plan_common.hpp) and the image stems, per image (batch 1).
// Linear layers as runtimes run them past the last spatial layer, a 1x1 convolution over 1x1
// (oneDNN's inner products too): at batch 1 their time is reading the weights, of 4 and 64 MiB
// in f32.
std::vector<ConvShape> grid_layers(DType dtype) {
  std::vector<ConvShape> layers;
  for (const auto& family : plan_detail::conv_families()) {
    const auto more = plan_detail::grid_layers(dtype, family);
    layers.insert(layers.end(), more.begin(), more.end());
  }
  for (const auto& stem : plan_detail::image_stems(dtype)) layers.push_back(stem);
  for (const std::int64_t width : {1024, 4096})
    layers.push_back(conv(dtype, 1, width, 1, width, 1, 1, 0));
  return layers;
}

const plan_detail::ConvFamily& family(const std::string& name) {
  for (const auto& f : plan_detail::conv_families())
    if (f.name == name) return f;
  return plan_detail::conv_families().front();
}

ConvShape representative(DType dtype, const std::string& name) {
  return plan_detail::grid_representative(dtype, family(name));
}

// The kinds of layer that most networks spend most of their time in: the expanding or reducing
// 1x1s, the 3x3s, the strided 3x3s and the depthwise 3x3s, and the 7x7 stem. Per image, each
// family's representative (plan_common.hpp); at a larger batch (`batch` > 1), its layer of the
// largest spatial size, which reaches the most output positions.
std::vector<ConvShape> core_layers(DType dtype, std::int64_t batch = 1) {
  std::vector<ConvShape> layers;
  for (const char* name : {"1x1x4", "3x3", "3x3/2", "dw3x3"})
    layers.push_back(batch > 1 ? plan_detail::grid_largest(dtype, family(name))
                               : representative(dtype, name));
  layers.push_back(plan_detail::image_stems(dtype).back());
  for (auto& layer : layers) layer.n = batch;
  return layers;
}

// Grouped 3x3s (not depthwise), per image: 4, 16 and 64 groups of 4, 16 and 64 channels each,
// where that makes 64, 256 or 1024 channels, on line 6 of the grid (64 channels at 112x112, 256
// at 28x28, 1024 at 7x7); and two strided ones, from 112x112 and 56x56. oneDNN runs them blocked
// by the group's width (aBcd4b, aBcd8b, nChw16c: PyTorch's layouts too) when free to choose;
// forced into 16-channel blocks, a group of 4 or 8 runs in the reference implementation, orders
// of magnitude slower, so "any" alone.
std::vector<ConvShape> grouped_layers(DType dtype) {
  std::vector<ConvShape> layers;
  for (const int v : {2, 4, 6}) {
    const std::int64_t channels = plan_detail::kGridChannels[static_cast<std::size_t>(v)];
    const std::int64_t hw = plan_detail::kGridSpatial[static_cast<std::size_t>(6 - v)];
    for (const std::int64_t groups : {4, 16, 64}) {
      const std::int64_t width = channels / groups;
      if (width == 4 || width == 16 || width == 64)
        layers.push_back(conv(dtype, 1, channels, hw, channels, 3, 1, 1, groups));
    }
  }
  layers.push_back(conv(dtype, 1, 64, 112, 64, 3, 2, 1, 4));
  layers.push_back(conv(dtype, 1, 256, 56, 256, 3, 2, 1, 16));
  return layers;
}

// A GEMM grid of powers of two (docs/calibration-grid.md). The estimator looks a product up by
// (batch, rows, columns, depth) in log2 space; the grid spreads its points over those axes.
// `subset`: the int8 grid, a few points of each kind.
void add_gemms(std::vector<GemmShape>& out, DType dtype, bool quick, bool subset) {
  const auto add = [&](std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1) {
    out.push_back(GemmShape{dtype, m, n, k, batch});
  };
  // Square: the efficiency curve from tiny to peak.
  const std::vector<std::int64_t> squares =
      quick    ? std::vector<std::int64_t>{64, 256, 1024, 2048}
      : subset ? std::vector<std::int64_t>{64, 256, 1024, 2048, 4096}
               : std::vector<std::int64_t>{64, 128, 256, 512, 1024, 2048, 4096};
  for (const auto size : squares) add(size, size, size);
  if (quick || subset) {
    // Skinny: 1 and 16 rows against 4096 x 4096 weights (memory bound).
    for (const std::int64_t m : {1, 16}) add(m, 4096, 4096);
  } else {
    // Skinny to square: rows (a step's tokens) of 1, 4, 16 and 64, a factor of 4 apart, since
    // efficiency changes with the rows far faster than with the weights' shape, against weights
    // on a lattice of powers of two: rows 1 and 16 take the corners of [1024, 4096]^2, rows 4
    // and 64 its centre (2048 x 2048) and 8192 x 2048 both ways round, which reach the wider
    // weights. The two sets interleave, so a product of a few rows finds points around it in each
    // of its three sizes.
    const std::vector<std::pair<std::int64_t, std::int64_t>> corners = {
        {1024, 1024}, {4096, 4096}, {4096, 1024}, {1024, 4096}};
    const std::vector<std::pair<std::int64_t, std::int64_t>> centres = {
        {2048, 2048}, {8192, 2048}, {2048, 8192}};
    for (const std::int64_t m : {1, 4, 16, 64})
      for (const auto& [n, k] : m == 1 || m == 16 ? corners : centres) add(m, n, k);
    // Wide N, small K: a product over an output of 32768 columns (a vocabulary-sized head), for a
    // step of one row and of 256.
    add(1, 32768, 2048);
    add(256, 32768, 1024);
  }
  // Small K: low arithmetic intensity per output.
  add(2048, 2048, 64);
  // Batched, attention-like products over a lattice of batch x heads {8, 32, 128}, head widths
  // {32, 64, 128} and tokens, each value of each ladder once per kind (a Latin square), the
  // longest sequences with the fewest products: a prefill's scores (T x T x width) and context
  // (T x width x T) over T in {128, 512, 2048}, and a decode step's, one row against T cached
  // tokens in {256, 1024, 4096}. The quick suite and the int8 grid: the middle prefill's.
  struct Attention {
    std::int64_t batch, tokens, width;
  };
  const std::vector<Attention> prefill =
      quick || subset ? std::vector<Attention>{{32, 512, 128}}
                      : std::vector<Attention>{{8, 2048, 64}, {32, 512, 128}, {128, 128, 32}};
  for (const auto& a : prefill) {
    add(a.tokens, a.tokens, a.width, a.batch);
    if (!quick) add(a.tokens, a.width, a.tokens, a.batch);
  }
  if (!quick && !subset) {
    for (const auto& a : std::vector<Attention>{{8, 4096, 32}, {32, 1024, 128}, {128, 256, 64}}) {
      add(1, a.tokens, a.width, a.batch);
      add(1, a.width, a.tokens, a.batch);
    }
  }
}

}  // namespace

Plan cpu_plan(const DeviceDescription& device, Suite suite) {
  const bool quick = suite == Suite::quick;
  Plan plan;

  add_gemms(plan.gemm, DType::f32, quick, false);
  add_gemms(plan.gemm, DType::bf16, quick, false);
  add_gemms(plan.gemm, DType::int8, quick, true);
  // Cold weights where the weights alone would sit in the caches (larger ones are read from
  // memory on every call already, but for the few per cent of them a cache keeps),
  // for the rows of a decode step or a prefill: a layer whose weights come from memory pays their
  // read, and on some paths a copy into the kernel's layout, that many rows do not amortise.
  const std::int64_t caches = largest_cache_bytes(device.levels);
  for (const auto& shape : plan.gemm)
    if (shape.m <= 128 && shape.batch == 1 && shape.weight_bytes() >= 256.0 * kKiB &&
        shape.weight_bytes() < 2.0 * caches)
      plan.gemm_cold.push_back(shape);

  // Every layer twice: in the layout oneDNN prefers when free to choose ("any"), and blocked
  // (nChw16c / nChw8c), the layout frameworks that keep activations in oneDNN's own format run
  // (PyTorch's mkldnn path). The default suite measures the whole grid per image, and the core
  // layers at a larger batch too: their activations, not their weights, then fill the caches,
  // and at a batch of 16 they outgrow them. The quick suite measures the core
  // layers and a linear layer per image, and the 3x3 one at a larger batch. A few plain NHWC /
  // NCHW points beside.
  const std::int64_t large_batch = quick ? 8 : 16;
  for (const DType dtype : {DType::f32, DType::bf16}) {
    std::vector<ConvShape> shapes;
    if (quick) {
      shapes = core_layers(dtype);
      shapes.push_back(conv(dtype, 1, 1024, 1, 1024, 1, 1, 0));
      shapes.push_back(representative(dtype, "3x3"));
      shapes.back().n = large_batch;
    } else {
      shapes = grid_layers(dtype);
      const auto batched = core_layers(dtype, large_batch);
      shapes.insert(shapes.end(), batched.begin(), batched.end());
    }
    for (const auto& shape : shapes) {
      for (const ConvLayout layout : {ConvLayout::any, ConvLayout::blocked}) {
        plan.conv.push_back({shape, layout});
      }
    }
    if (!quick) {
      // Linear layers past batch 1, blocked as frameworks run them: oneDNN's 1x1 convolution over
      // 1x1 takes several times its batch-1 time at a batch of 8 or more, unlike a matmul's M
      // rows. One of 1024 channels at batch 8 and 32, and one of 16384 to 4096 at batch 8 whose
      // weights (256 MiB in f32) outgrow any cache: a smaller one's time depends on how much of
      // a shared cache other tenants leave it, too unsteady a point to lend its rate.
      for (const std::int64_t n : {8, 32})
        plan.conv.push_back({conv(dtype, n, 1024, 1, 1024, 1, 1, 0), ConvLayout::blocked});
      plan.conv.push_back({conv(dtype, 8, 16384, 1, 4096, 1, 1, 0), ConvLayout::blocked});
      // Grouped 3x3s, in the layout oneDNN picks (grouped_layers), and the one of the largest
      // spatial size with 16 groups at a larger batch.
      auto grouped = grouped_layers(dtype);
      grouped.push_back(conv(dtype, large_batch, 64, 112, 64, 3, 1, 1, 16));
      for (const auto& shape : grouped) plan.conv.push_back({shape, ConvLayout::any});
    }
  }
  // Cold weights for the batch-1 layers in the blocked layout (frameworks' path) whose weights
  // take 256 KiB or more; smaller ones cost little to read again. Their weights are copied past
  // the caches, one copy per call, as a network's layers find them.
  for (const auto& [shape, layout] : plan.conv)
    if (shape.n == 1 && layout == ConvLayout::blocked && shape.weight_bytes() >= 256.0 * kKiB)
      plan.conv_cold.push_back({shape, layout});

  // Plain layouts, which another algorithm runs: the 3x3 and the expanding 1x1 representatives.
  const ConvShape plain_3x3 = representative(DType::f32, "3x3");
  const ConvShape plain_1x1 = representative(DType::f32, "1x1x4");
  plan.conv.push_back({plain_3x3, ConvLayout::nhwc});
  if (!quick) {
    plan.conv.push_back({plain_3x3, ConvLayout::nchw});
    plan.conv.push_back({plain_1x1, ConvLayout::nhwc});
    plan.conv.push_back({plain_1x1, ConvLayout::nchw});
  }

  // STREAM sweep: inside L1 up to past 4x the last-level cache (DRAM). Sizes are total bytes of
  // all arrays. The level fits use triad points inside each level and past 4x the LLC; the update
  // points give the in-place levels: an op that writes over the tensor it reads (a ReLU) moves it
  // at a rate of its own, well above the triad's where the caches hold it.
  plan.stream_ops = quick ? std::vector<StreamOp>{StreamOp::copy, StreamOp::triad, StreamOp::update}
                          : std::vector<StreamOp>{StreamOp::copy, StreamOp::scale, StreamOp::add,
                                                  StreamOp::triad, StreamOp::update};
  const std::int64_t llc = std::max<std::int64_t>(largest_cache_bytes(device.levels), 8 * kMiB);
  // First DRAM size: 4x LLC plus a quarter, rounded up to 64 MiB.
  const std::int64_t dram = (4 * llc + llc / 4 + 64 * kMiB - 1) / (64 * kMiB) * (64 * kMiB);
  std::vector<std::int64_t> sizes;
  const std::int64_t step = 4;
  for (std::int64_t bytes = 32 * kKiB; bytes < 4 * llc; bytes *= step) {
    sizes.push_back(bytes);
  }
  sizes.push_back(dram);
  plan.stream_bytes = sizes;
  // A second main-memory size for the triad: the headline is the best of two, less luck. The
  // other ops there would cost several seconds of a 3-minute run and tell nothing new. And the
  // triad from 3/8 to 3/4 of the last-level cache, where a VM's share of a cache that other
  // tenants use ends, well before its size: the estimator keeps a model's weights in the cache
  // only as far as it held them.
  if (!quick) plan.triad_only_bytes = {3 * llc / 8, llc / 2, 5 * llc / 8, 3 * llc / 4, 2 * dram};

  plan.fma_dtypes = {DType::f32};
  plan.measure_clock = true;
  // The ops between the GEMMs (calibration_shape): 256K elements (1 MiB a tensor in f32, in the
  // private caches; an add reads two), rows of 1024 for softmax and layernorm; add_padded's
  // channels leave the last block half full (24 in blocks of 16), as a channel count that is not
  // a multiple of the block does. The quick suite keeps the ones transformers and CNNs spend most
  // on.
  for (const DType dtype : {DType::f32, DType::bf16}) {
    for (const auto& op : vector_op_names()) {
      if (quick && op != "gelu" && op != "add" && op != "add_padded" && op != "softmax" &&
          op != "layernorm")
        continue;
      plan.vector_ops.push_back(calibration_shape(op, dtype, cpu_channel_block(device.properties)));
    }
    // The layout changes once more past the caches: a tensor of half the triad's main-memory
    // working set. A reorder of a plain tensor into 16-channel blocks and back writes or reads 16
    // planes at once, and from main memory it runs at well under the triad's rate, a fraction of
    // its rate from the caches; a network that changes layouts between its layers spends a large
    // share of a larger batch's time in them.
    if (!quick) {
      for (const auto* op : {"reorder_blocked", "reorder_plain"}) {
        VectorOpShape shape = calibration_shape(op, dtype, cpu_channel_block(device.properties));
        shape.cols = dram / 2 / (shape.rows * dtype_bytes(dtype));
        plan.vector_ops.push_back(shape);
      }
    }
  }

  if (quick) {
    plan.gemm_rule = rule(3, 0.3, 6, 1, 0.01);
    plan.conv_rule = rule(3, 0.2, 6, 1, 0.01);
    plan.stream_rule = rule(5, 0.25, 8, 1, 0.005);
    plan.fma_rule = rule(20, 0.5, 20, 2, 0.01);
    plan.overhead_rule = rule(50, 0.1, 30, 10, 0.005);
    plan.vector_op_rule = rule(10, 0.1, 10, 1, 0.005);
  } else {
    plan.gemm_rule = rule(6, 1.5, 12, 1, 0.01);
    plan.conv_rule = rule(5, 0.5, 10);
    plan.stream_rule = rule(10, 1.0, 12, 2, 0.01);
    plan.fma_rule = rule(50, 2.0, 50);
    plan.overhead_rule = rule(200, 0.5, 100, 20, 0.01);
    plan.vector_op_rule = rule(20, 0.3, 20, 2, 0.01);
  }
  // The sentinel (~0.3 ms) runs between points: a few samples, no long warm-up.
  plan.sentinel_rule = rule(3, 0.01, 0, 1, 0.0);
  // The memory probe: a triad over 8x the cache below the last level (32 MiB behind a 4 MiB L2):
  // past the private caches, into the shared ones and memory that other tenants load, and short
  // enough (about a millisecond) to run between points.
  std::int64_t below_last = 0;
  for (const auto& level : device.levels)
    if (level.bytes && *level.bytes < caches) below_last = std::max(below_last, *level.bytes);
  plan.memory_sentinel_bytes = std::clamp<std::int64_t>(8 * below_last, 8 * kMiB, 64 * kMiB);
  plan.max_remeasure = quick ? 1 : 2;
  // Main memory's copy, scale and add (sweep points, not headline figures) are not measured again
  // at the end: in the default suite, at two sizes past 1 GiB, that would take a large share of a
  // 3-minute run.
  plan.confirm_other_streams = false;
  // The triad inside the last-level cache, past the private ones, once more at the end: the
  // share of a shared last-level cache that a VM gets changes from one run to the next with the
  // other tenants' load, and it tells the estimator whether a model's weights stay there.
  plan.confirm_last_cache_triads = !quick;
  plan.quiet_wait_s = quick ? 0 : 20;
  // The suites' goals (30 s and 3 min) less a margin for start-up and writing the profile: on a
  // busy host the re-measures, second looks and the wait above are what give way.
  plan.deadline_s = quick ? 27 : 170;
  // The headline candidates, six per category and up to twelve within 15% of its best, are timed
  // in bursts all through the run (PeakWatch): a few samples, no warm-up (the fastest of many
  // bursts is what counts), for 10% of the elapsed time. The margin splits a category's time among
  // more candidates: a point within it may be the category's best measured in a busy spell.
  plan.watch_share = 0.10;
  plan.watch_pool = 6;
  plan.watch_admit_within = 0.15;
  plan.watch_most = 12;
  plan.watch_keeps_kernels = true;
  plan.burst_rule = rule(3, 0.02, 0, 0, 0.0);
  plan.burst_rule.max_samples = 3;
  // On a shared host main memory's triad can run at half its best for minutes and then near it
  // for a minute or so, and a burst of three samples catches only the start of such a fast
  // spell. So the watch stays on a triad burst that finds one. Only main memory's: with every
  // category's, one whose first look fell in a slow spell (the FMA's, of the clock) could spend
  // most of the watch's time on spells and leave the others a few bursts.
  plan.watch_spell_s = quick ? 0.5 : 2.0;
  plan.watch_spell_budget_s = quick ? 1.0 : 6.0;
  // A shared host's fast and slow spells of main memory last tens of seconds: a round of the
  // companions in each fast one, not one every burst of a slow triad's best.
  plan.watch_companion_every_s = quick ? 0 : 15.0;
  // The default suite looks at every vector op, GEMM and convolution of up to 20 ms a second
  // time (a busy spell of a shared host can slow a short point by a third, and lasts seconds);
  // the quick one has no time for it.
  if (!quick) {
    plan.revisit_max_s = 0.02;
    plan.revisit_rule = rule(3, 0.1, 3, 1, 0.005);
    // The best layers a last look: both looks of one layer can fall in slow spells while the
    // other layers find their usual figures, and it then ranks too low to be confirmed.
    plan.final_look_within = 0.2;
    plan.final_looks = 10;
    // And the layers far behind their twin in another layout: the blocked points are the ones
    // frozen CNNs are costed from, and a gap of more than 15% is more likely a slow spell than
    // the layout.
    plan.twin_look_gap = 0.15;
    // Layers of up to 0.1 s (the larger batches), past the second looks' 20 ms, are candidates
    // too: their one look may have fallen in a slow spell.
    plan.last_look_max_s = 0.1;
    // Decode- and prefill-like products (up to 128 rows) a third draw: see Plan.
    plan.last_look_gemm_rows = 128;
    plan.gemm_last_look_wait_s = 15;
    plan.gemm_last_look_within = 0.06;
    // What the goal leaves goes to more bursts for every category, each its share, so that each
    // run draws its figures from about as many samples: given to the unsettled categories alone
    // (main memory's, whose fast spells are rare on a shared host), a settled one's figure would
    // come from a few hundred bursts in one run and thousands in the next, and the cores' boost
    // clock, which comes and goes, would decide it.
    plan.closing_watch = true;
  }
  return plan;
}

}  // namespace truepeak
