// What a CPU calibration measures, and how long it may spend on each point. Budgets are sized for
// the whole CPU run to take <= 30 s (--quick) or <= 3 min (default) on a 2-core machine; the
// points that decide the headline peaks (large GEMMs, DRAM triad, FMA) get the most samples,
// because on a shared machine only a best-of-many figure is stable from run to run.
#include <algorithm>

#include "calibrate/plan.hpp"
#include "calibrate/plan_common.hpp"
#include "core/units.hpp"

namespace truepeak {
namespace {

using plan_detail::conv;
using plan_detail::rule;

// Layers of ResNet-50 (stem, 1x1 and 3x3 at the four stages, the strided 3x3 and 1x1 of a stage's
// first block) and MobileNetV2 (depthwise 3x3, stride 1 and 2; the 1x1 expand and project of its
// inverted bottlenecks), per image (batch set later).
std::vector<ConvShape> cnn_layers(DType dtype, bool quick) {
  std::vector<ConvShape> layers = {
      conv(dtype, 1, 3, 224, 64, 7, 2, 3),         // stem 7x7/2
      conv(dtype, 1, 64, 56, 64, 3, 1, 1),         // stage 1 3x3
      conv(dtype, 1, 256, 14, 1024, 1, 1, 0),      // stage 3 1x1 expand
      conv(dtype, 1, 512, 7, 512, 3, 1, 1),        // stage 4 3x3
      conv(dtype, 1, 128, 56, 128, 3, 2, 1),       // stage 2 strided 3x3
      conv(dtype, 1, 144, 56, 144, 3, 1, 1, 144),  // MobileNetV2 depthwise
  };
  if (!quick) {
    const std::vector<ConvShape> more = {
        conv(dtype, 1, 64, 56, 256, 1, 1, 0),        // stage 1 1x1 expand
        conv(dtype, 1, 256, 56, 64, 1, 1, 0),        // stage 1 1x1 reduce
        conv(dtype, 1, 128, 28, 128, 3, 1, 1),       // stage 2 3x3
        conv(dtype, 1, 512, 28, 128, 1, 1, 0),       // stage 2 1x1 reduce
        conv(dtype, 1, 256, 14, 256, 3, 1, 1),       // stage 3 3x3
        conv(dtype, 1, 512, 7, 2048, 1, 1, 0),       // stage 4 1x1 expand
        conv(dtype, 1, 2048, 7, 512, 1, 1, 0),       // stage 4 1x1 reduce
        conv(dtype, 1, 32, 112, 32, 3, 1, 1, 32),    // MobileNetV2 depthwise, first block
        conv(dtype, 1, 96, 112, 96, 3, 2, 1, 96),    // MobileNetV2 depthwise, strided
        conv(dtype, 1, 576, 14, 576, 3, 1, 1, 576),  // MobileNetV2 depthwise, late block
        conv(dtype, 1, 16, 112, 96, 1, 1, 0),        // MobileNetV2 1x1 expand, few channels, 112²
        conv(dtype, 1, 144, 56, 24, 1, 1, 0),        // MobileNetV2 1x1 project
        // The strided 1x1 shortcut of a stage's first block (ResNet-18/34 stage 2, ResNet-50
        // stages 2 and 4): oneDNN reads its input with gaps, unlike a strided 3x3.
        conv(dtype, 1, 64, 56, 128, 1, 2, 0),
        conv(dtype, 1, 256, 56, 512, 1, 2, 0),
        conv(dtype, 1, 1024, 14, 2048, 1, 2, 0),
        // Efficient CNNs' narrow layers (ShuffleNet, RegNet, MobileNetV3, EfficientNet): a 1x1
        // of a few dozen to a few hundred channels takes 20-100 us here, and runs at half the
        // rate of ResNet's wide ones or less. Square 1x1s at the stage resolutions; a 6x expand
        // and project at 28x28 and at 7x7; a small stem (3x3/2, 32 channels); a 5x5 depthwise.
        // Channels fill whole 16-channel blocks: the estimator pads other counts to them.
        conv(dtype, 1, 48, 28, 48, 1, 1, 0),
        conv(dtype, 1, 96, 14, 96, 1, 1, 0),
        conv(dtype, 1, 192, 7, 192, 1, 1, 0),
        conv(dtype, 1, 384, 7, 384, 1, 1, 0),
        conv(dtype, 1, 32, 28, 192, 1, 1, 0),
        conv(dtype, 1, 192, 28, 32, 1, 1, 0),
        conv(dtype, 1, 128, 7, 768, 1, 1, 0),
        conv(dtype, 1, 768, 7, 128, 1, 1, 0),
        conv(dtype, 1, 3, 224, 32, 3, 2, 1),
        conv(dtype, 1, 128, 28, 128, 5, 1, 2, 128),
        // Classifiers as runtimes run them, a linear layer as a 1x1 convolution over 1x1 (oneDNN's
        // inner products too): at batch 1 their time is reading the weights.
        conv(dtype, 1, 1024, 1, 1024, 1, 1, 0),
        conv(dtype, 1, 4096, 1, 4096, 1, 1, 0),
    };
    layers.insert(layers.end(), more.begin(), more.end());
  }
  return layers;
}

// Grouped 3x3s (not depthwise), per image: ResNeXt-50 32x4d's at its four stages (4 to 32
// channels a group) and the strided ones of a stage's first block, and RegNet's of 16 channels a
// group in few and many groups. oneDNN runs them blocked by the group's width (aBcd4b, aBcd8b,
// nChw16c: PyTorch's layouts too) when free to choose; forced into 16-channel blocks, a group of 4
// or 8 runs in the reference implementation (1000x slower here), so "any" alone.
std::vector<ConvShape> grouped_layers(DType dtype) {
  return {
      conv(dtype, 1, 128, 56, 128, 3, 1, 1, 32),
      conv(dtype, 1, 256, 28, 256, 3, 1, 1, 32),
      conv(dtype, 1, 512, 14, 512, 3, 1, 1, 32),
      conv(dtype, 1, 1024, 7, 1024, 3, 1, 1, 32),
      conv(dtype, 1, 256, 56, 256, 3, 2, 1, 32),
      conv(dtype, 1, 512, 28, 512, 3, 2, 1, 32),
      conv(dtype, 1, 64, 28, 64, 3, 1, 1, 4),
      conv(dtype, 1, 160, 14, 160, 3, 1, 1, 10),
  };
}

void add_gemms(std::vector<GemmShape>& out, DType dtype, bool quick, bool subset) {
  const auto add = [&](std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1) {
    out.push_back(GemmShape{dtype, m, n, k, batch});
  };
  // Square: the efficiency curve from tiny to peak.
  const std::vector<std::int64_t> squares =
      quick    ? std::vector<std::int64_t>{64, 256, 1024, 2048}
      : subset ? std::vector<std::int64_t>{64, 256, 1024, 2048, 4096}
               : std::vector<std::int64_t>{64, 128, 256, 512, 1024, 2048, 4096};
  for (const auto size : squares) {
    add(size, size, size);
  }
  // Skinny, decode-like: a few tokens against a large weight matrix (memory bound).
  for (const std::int64_t m :
       quick || subset ? std::vector<std::int64_t>{1, 32} : std::vector<std::int64_t>{1, 8, 32}) {
    add(m, 4096, 4096);
  }
  if (!quick && !subset) {
    add(8, 11008, 4096);  // an LLM MLP up-projection
    // A language-model head: a prefill's tokens against a vocabulary (wide N, small K).
    add(128, 32768, 768);
    // Smaller weights at M = 1, 8 and 128 (a BERT/GPT-2-sized layer, its MLP up and down, in a
    // decode step and a prefill): efficiency changes with M far faster than with N and K, so each
    // M has its own points.
    for (const std::int64_t m : {1, 8, 128}) {
      add(m, 1024, 1024);
      add(m, 4096, 1024);
      add(m, 1024, 4096);
      if (m < 128) add(m, 32768, 768);  // a language-model head in a decode step
    }
  }
  // Small K: low arithmetic intensity per output.
  add(2048, 2048, 64);
  if (!quick && !subset) {
    add(4096, 4096, 16);
  }
  // Batched, attention-like: scores (Q K^T) and context (P V) per head.
  add(128, 128, 64, 12);
  if (!quick) {
    add(128, 64, 128, 12);
    if (!subset) {
      add(512, 512, 64, 16);
      add(512, 64, 512, 16);
      // A decode step's attention, one query row per head against a KV cache of 128: scores and
      // context over 12 heads (batch 1) and 96 (batch 8).
      for (const std::int64_t heads : {12, 96}) {
        add(1, 128, 64, heads);
        add(1, 64, 128, heads);
      }
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
  // read, and on some paths a copy into the kernel's layout, that many rows do not amortise (a
  // prefill's 128 x 768 x 3072 layer in bf16 took 0.68 ms in a model against 0.43 warm on AMX).
  const std::int64_t caches = largest_cache_bytes(device.levels);
  for (const auto& shape : plan.gemm)
    if (shape.m <= 128 && shape.batch == 1 && shape.weight_bytes() >= 256.0 * kKiB &&
        shape.weight_bytes() < 2.0 * caches)
      plan.gemm_cold.push_back(shape);

  // Every CNN layer twice: in the layout oneDNN prefers when free to choose ("any"), and blocked
  // (nChw16c / nChw8c), the layout frameworks that keep activations in oneDNN's own format run
  // (PyTorch's mkldnn path). At batch 1 and a larger batch; a few plain NHWC / NCHW points beside.
  const std::int64_t large_batch = quick ? 8 : 16;
  for (const DType dtype : {DType::f32, DType::bf16}) {
    std::vector<ConvShape> shapes = cnn_layers(dtype, quick);
    const auto batched = cnn_layers(dtype, true);
    for (std::size_t i = 0; i < batched.size(); ++i) {
      if (quick && i != 1) {
        continue;  // quick: one larger-batch point per dtype
      }
      shapes.push_back(batched[i]);
      shapes.back().n = large_batch;
    }
    if (!quick) {
      // Inverted-bottleneck 1x1s and the strided depthwise at 112² at a larger batch too: their
      // activations, not their weights, fill the caches, and at 112² they outgrow them (a
      // batch-8 MobileNetV2's depthwise 3x3/2 over 96 channels at 112² took 1.88 ms in the model
      // on a 32 MiB L3, twice what its batch-1 point, whose input the caches hold, gives).
      for (const auto& layer : {conv(dtype, large_batch, 16, 112, 96, 1, 1, 0),
                                conv(dtype, large_batch, 144, 56, 24, 1, 1, 0),
                                conv(dtype, large_batch, 96, 112, 96, 3, 2, 1, 96)})
        shapes.push_back(layer);
    }
    for (const auto& shape : shapes) {
      for (const ConvLayout layout : {ConvLayout::any, ConvLayout::blocked}) {
        plan.conv.push_back({shape, layout});
      }
    }
    if (!quick) {
      // Classifiers past batch 1, blocked as frameworks run them: oneDNN's 1x1 convolution over
      // 1x1 takes several times its batch-1 time (a 4096x4096 f32 one 1.4 ms at batch 1, 8.3 at 8
      // and 31 at 32 here), unlike a matmul's M rows. A small one at batch 8 and 32, and one
      // of 16384 to 4096 at batch 8, with weights as large as the caches here (256 MiB in f32;
      // 37 ms, and 70 in bf16, steady): a 4096x4096 one at batch 8 took 7.5 ms or 19 as other
      // tenants left the cache its weights or not, too unsteady a point to lend its rate.
      for (const std::int64_t n : {8, 32})
        plan.conv.push_back({conv(dtype, n, 1024, 1, 1024, 1, 1, 0), ConvLayout::blocked});
      plan.conv.push_back({conv(dtype, 8, 16384, 1, 4096, 1, 1, 0), ConvLayout::blocked});
      // Grouped 3x3s, in the layout oneDNN picks (grouped_layers).
      auto grouped = grouped_layers(dtype);
      for (const std::size_t i : {0, 2}) {  // the narrowest and a 16-wide group, batched
        grouped.push_back(grouped[i]);
        grouped.back().n = large_batch;
      }
      for (const auto& shape : grouped) plan.conv.push_back({shape, ConvLayout::any});
    }
  }
  // Cold weights for the batch-1 layers in the blocked layout (frameworks' path) whose weights
  // take 256 KiB or more; smaller ones cost little to read again. Their weights are copied past
  // the caches, one copy per call, as a network's layers find them.
  for (const auto& [shape, layout] : plan.conv)
    if (shape.n == 1 && layout == ConvLayout::blocked && shape.weight_bytes() >= 256.0 * kKiB)
      plan.conv_cold.push_back({shape, layout});

  const ConvShape plain_3x3 = conv(DType::f32, 1, 64, 56, 64, 3, 1, 1);
  const ConvShape plain_1x1 = conv(DType::f32, 1, 256, 14, 1024, 1, 1, 0);
  plan.conv.push_back({plain_3x3, ConvLayout::nhwc});
  if (!quick) {
    plan.conv.push_back({plain_3x3, ConvLayout::nchw});
    plan.conv.push_back({plain_1x1, ConvLayout::nhwc});
    plan.conv.push_back({plain_1x1, ConvLayout::nchw});
  }

  // STREAM sweep: inside L1 up to past 4x the last-level cache (DRAM). Sizes are total bytes of
  // all arrays. The level fits use triad points inside each level and past 4x the LLC; the update
  // points give the in-place levels (a ReLU over the tensor it reads moved twice the triad's
  // rate here: 117 against 57 GB/s at 37 MiB).
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
  // other ops there took 10-15 s of a 3-minute run on a busy host and told nothing new. And the
  // triad from 3/8 to 3/4 of the last-level cache, where a VM's share of a cache that
  // other tenants use ends (a 32 MiB L3 here served 16 MiB at 2.3x main memory and 24 MiB at
  // 1.4x): the estimator keeps a model's weights in the cache only as far as it held them.
  if (!quick) plan.triad_only_bytes = {3 * llc / 8, llc / 2, 5 * llc / 8, 3 * llc / 4, 2 * dram};

  plan.fma_dtypes = {DType::f32};
  plan.measure_clock = true;
  // The ops between the GEMMs (calibration_shape): 256K elements (1 MiB a tensor in f32, in the
  // private caches; an add reads two), rows of 1024 for softmax and layernorm; add_padded's
  // channels leave the last block half full (24 in blocks of 16, as MobileNets' and EfficientNets'
  // residual adds at 56x56). The quick suite keeps the ones transformers and CNNs spend most on.
  for (const DType dtype : {DType::f32, DType::bf16}) {
    for (const auto& op : vector_op_names()) {
      if (quick && op != "gelu" && op != "add" && op != "add_padded" && op != "softmax" &&
          op != "layernorm")
        continue;
      plan.vector_ops.push_back(calibration_shape(op, dtype, cpu_channel_block(device.properties)));
    }
    // The layout changes once more past the caches: a tensor of half the triad's main-memory
    // working set. A reorder of a plain tensor into 16-channel blocks and back writes or reads 16
    // planes at once, and from main memory it runs at well under the triad's rate (PyTorch's
    // blocked-to-plain copy here: 9-12 G elements/s up to a 6 MiB tensor, 4 from 12 MiB on, 3.4
    // at 98 MiB); a batch-8 EfficientNet-B0 spends a fifth of its time in them.
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
  // enough (about a millisecond here) to run between points.
  std::int64_t below_last = 0;
  for (const auto& level : device.levels)
    if (level.bytes && *level.bytes < caches) below_last = std::max(below_last, *level.bytes);
  plan.memory_sentinel_bytes = std::clamp<std::int64_t>(8 * below_last, 8 * kMiB, 64 * kMiB);
  plan.max_remeasure = quick ? 1 : 2;
  // Main memory's copy, scale and add (sweep points, not headline figures) are not measured again
  // at the end: in the default suite, at two sizes past 1 GiB, that took 25 s of a 3-minute run.
  plan.confirm_other_streams = false;
  // The triad inside the last-level cache, past the private ones, once more at the end: the
  // share of a 32 MiB L3 that this VM got ran 12 and 16 MiB at 1.1x main memory in one run and
  // at 2.3x in the run before, which tells the estimator whether a model's weights stay there.
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
  // Seen here: main memory's triad at 60-70 GB/s for minutes, then at 130-155 for a minute or so;
  // two runs whose bursts each caught such a spell found 129.6 and 122.3 GB/s in three samples a
  // burst, and a second of samples inside one ran it at 151-156. So the watch stays on a triad
  // burst that finds a spell. Only main memory's: with every category's, the FMA, whose first
  // look fell in a slow spell of the clock, took 39 s of spells in one run and left the GEMMs a
  // second or two of bursts.
  plan.watch_spell_s = quick ? 0.5 : 2.0;
  plan.watch_spell_budget_s = quick ? 1.0 : 6.0;
  // The host's fast and slow spells of main memory last 20-40 s here: a round of the companions
  // in each fast one, not one every burst of a slow triad's best.
  plan.watch_companion_every_s = quick ? 0 : 15.0;
  // The default suite looks at every vector op, GEMM and convolution of up to 20 ms a second
  // time (a busy spell here slows a batch-1 convolution by a third and lasts seconds); the quick
  // one has no time for it.
  if (!quick) {
    plan.revisit_max_s = 0.02;
    plan.revisit_rule = rule(3, 0.1, 3, 1, 0.005);
    // Seen here: the best f32 layer of one run at 382 GFLOP/s and 308 in the next, both of its
    // looks in the second run slow while the other layers' confirmations found their usual figures.
    plan.final_look_within = 0.2;
    plan.final_looks = 10;
    // Seen here: a batch-1 blocked 3x3 at 1.05 ms in one run, its nhwc twin at 0.73 and both at
    // 0.65-0.66 in the run before; the blocked points are the ones frozen CNNs are costed from.
    plan.twin_look_gap = 0.15;
    // Seen here: a batch-16 blocked 3x3 of 64 channels at 56x56 at 117 GFLOP/s in its one look
    // (29 ms, past the second looks' 20 ms), its nhwc twin at 227, and the next run's at 221.
    plan.last_look_max_s = 0.1;
    // Decode- and prefill-like products (up to 128 rows) a third draw: see Plan.
    plan.last_look_gemm_rows = 128;
    plan.gemm_last_look_wait_s = 15;
    plan.gemm_last_look_within = 0.06;
    // Seen here (a 2-core EPYC VM whose points take 60-90 s): main memory's bursts came within 3%
    // of their best in 8-17 of 91-150, and two runs' figures 13.5% apart (110.4 and 97.3 GB/s); a
    // triad timed every few seconds over three minutes found 60 GB/s for most of them and 132 for
    // a few. With the slack for the unsettled categories alone, the FMA, settled in one run on
    // 485 GFLOP/s in 274 bursts, found 526 in the next in 5325 (the cores' boost clock comes and
    // goes): every category gets its share, so that each run draws its figures from about as many
    // samples.
    plan.closing_watch = true;
  }
  return plan;
}

}  // namespace truepeak
