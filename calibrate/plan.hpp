// What a calibration measures on one device: the problem sets (shape grids, size sweeps) and the
// stopping rules. The driver runs a Plan; the plans for each device kind live in plan_<kind>.cpp.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/stats.hpp"

namespace truepeak {

enum class Suite { quick, full };

struct Plan {
  std::vector<GemmShape> gemm;
  // Measured again with cold weights (Backend::gemm_cold_weights): the memory-bound, decode-like
  // shapes, whose time is reading weights that a real model has long evicted from the caches.
  std::vector<GemmShape> gemm_cold;
  std::vector<std::pair<ConvShape, ConvLayout>> conv;
  // Measured again with cold weights (Backend::conv_cold_weights): batch-1 layers whose weights
  // are large enough that reading them again from main memory shows in their time.
  std::vector<std::pair<ConvShape, ConvLayout>> conv_cold;
  // Working-set sweep: every op in stream_ops at every size in stream_bytes (total bytes of all
  // arrays). The sweep must reach at least 4x the last-level cache.
  std::vector<StreamOp> stream_ops;
  std::vector<std::int64_t> stream_bytes;
  // Then the triad alone at these sizes (when stream_ops has it): more main-memory sizes for the
  // headline bandwidth, where the other ops would only measure the first size again.
  std::vector<std::int64_t> triad_only_bytes;
  std::vector<DType> fma_dtypes;
  // The core clock (Backend::clock), a peak-watch candidate like the FMA: the datasheet's peak is
  // derived from the fastest clock seen where no rated clock is readable (a VM).
  bool measure_clock = false;
  // Elementwise, softmax and layer-norm ops through the device's library (Backend::vector_op).
  std::vector<VectorOpShape> vector_ops;
  // Host<->device transfers (GPU only): sizes for h2d/d2h, pinned and pageable.
  std::vector<std::int64_t> transfer_bytes;
  std::int64_t bidirectional_bytes = 0;  // 0: not measured
  std::vector<std::int64_t> device_copy_bytes;

  StopRule gemm_rule;
  StopRule conv_rule;
  StopRule stream_rule;
  StopRule fma_rule;
  StopRule overhead_rule;
  StopRule vector_op_rule;
  StopRule transfer_rule;
  StopRule sentinel_rule;
  // A point measured while the sentinel ran slower than its recent quiet time (the fastest of
  // its last probes) by more than this ratio
  // is measured again (at most `max_remeasure` times).
  double sentinel_slowdown = 1.15;
  // Also probe memory between points: a triad over this many bytes (0: the compute sentinel
  // alone).
  std::int64_t memory_sentinel_bytes = 0;
  int max_remeasure = 2;
  // Measure the points behind the headline peaks (FMA, the `confirm_gemms` fastest GEMMs and
  // convolutions per dtype, with bursts the same number of main-memory triads; see PeakWatch)
  // once more at the end of the run, every sample counting, and (`confirm_other_streams`) the
  // other device-memory stream points too, keeping the faster run.
  bool confirm_peaks = true;
  bool confirm_other_streams = true;
  // With confirm_peaks, the triad points past the cache below the last level and inside the last
  // one are measured again too, the faster look kept: how much of a shared last-level cache this
  // machine gets (which the estimator keeps weights and activations in) is a single look's
  // verdict otherwise, and other tenants' load changes it by the second.
  bool confirm_last_cache_triads = false;
  int confirm_gemms = 3;
  // Before confirming, wait up to this long for the sentinel to run as fast as it ever did.
  double quiet_wait_s = 0;
  // The `watch_pool` fastest points of each headline category (FMA, GEMM and convolution per
  // dtype, main-memory triad) are timed in bursts of `burst_rule` between points, for this share
  // of the elapsed time (0: no bursts, and the pool is what the end confirms; see PeakWatch).
  // Their kernels are kept between uses when `watch_keeps_kernels`, else made and checked again
  // for the confirmation.
  double watch_share = 0;
  int watch_pool = 3;
  // Beyond the pool, points within this fraction of their category's best join it, up to
  // `watch_most` candidates a category (PeakWatch::Options).
  double watch_admit_within = 0;
  int watch_most = 0;
  bool watch_keeps_kernels = false;
  StopRule burst_rule;
  // How long the watch stays on a main-memory triad whose burst found a fast spell, and how long
  // in all (PeakWatch::Options).
  double watch_spell_s = 0;
  double watch_spell_budget_s = 0;
  double watch_companion_every_s = 0;  // PeakWatch::Options::companion_every_s
  // When the points are done before the deadline, the time it leaves after the confirmation goes
  // to more bursts (`closing_watch`), shared as the watch shares its time, among the categories
  // whose claim (PeakWatch) is at least `closing_watch_min_claim` (0: all of them). Without it a
  // fast machine ends its run at half its goal, its figures drawn from a few seconds of bursts.
  bool closing_watch = false;
  double closing_watch_min_claim = 0;
  // A second look: after the other points (before the confirmation), every vector op, GEMM and
  // convolution point that is not a peak-watch candidate and whose fastest sample took at most
  // `revisit_max_s` is made and measured again with `revisit_rule`; a faster second look joins
  // its samples to the first's. A point measured in a busy spell of a shared host then gets a
  // second draw minutes later (0: none).
  double revisit_max_s = 0;
  StopRule revisit_rule;
  // A last look at the best layers: after the confirmation (and its wait for a quiet machine),
  // every convolution point with a second look whose rate is within `final_look_within` of its
  // dtype's best convolution, up to `final_looks` per dtype (fastest first), is measured once more
  // with `revisit_rule`. The best layer is the fastest of many, each measured in a few looks; one
  // whose looks all fell in slow spells ranks too low to be a candidate (0: none).
  double final_look_within = 0;
  int final_looks = 0;
  // The last look also goes to every convolution point with a second look that ran more than
  // this fraction slower than another point of the same layer (blocked against oneDNN's own
  // choice, whichever layout that ran), the widest gap first, up to `final_looks` more per dtype. A layer's layouts mostly
  // run kernels of one family, so a point far behind its twin was likely measured in a slow
  // spell; plain NCHW points, run by another algorithm, neither take nor give one (0: none).
  double twin_look_gap = 0;
  // GEMM points of at most this many rows (a decode step's, a prefill's), warm and cold, with a
  // second look get a last look too, after the convolutions', one more draw each (0: none). A
  // shared host can run these slowly for longer than the minutes between two looks: it can
  // alternate, every few tens of seconds, between a state that runs products of a few rows at
  // full speed and one that runs them well slower (with main memory faster), and both looks of
  // every such point can fall in the slow one.
  std::int64_t last_look_gemm_rows = 0;
  // Before each of those last looks, wait (up to this long in all) until the compute sentinel
  // runs within `gemm_last_look_within` of the fastest it ever ran: the slow state above slows the
  // sentinel's product too, by about an eighth, so a look taken then would draw the slow figure
  // again (0: no wait).
  double gemm_last_look_wait_s = 0;
  double gemm_last_look_within = 0;
  // Convolution points whose fastest sample took longer than revisit_max_s and at most this long
  // get no second look but are candidates for the last look too: a point slowed past
  // revisit_max_s by a busy spell is the one that needs it (0: none).
  double last_look_max_s = 0;
  // The run's goal, in seconds from the start of the device's run (0: none). The optional work
  // gives way to it: the sentinel's re-measures, the second looks, the wait for a quiet machine
  // and the last look run only while they leave the confirmation time to end by then. The points
  // still to be measured are not counted, so early in a run nothing gives way; every point and
  // the confirmation still run, and on a host busy enough the run takes longer.
  double deadline_s = 0;
};

Plan cpu_plan(const DeviceDescription& device, Suite suite);
Plan gpu_plan(const DeviceDescription& device, Suite suite);

}  // namespace truepeak
