// What one device delivers, as the cost model asks for it: the time of a GEMM or convolution shape
// (a reference roofline over the efficiency interpolated between the profile's points), the
// bandwidth of the memory level that holds a working set, the per-op overhead, and the datasheet
// figures for the naive roofline beside it. Built once per (device, dtype).
#pragma once

#include <array>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/profile.hpp"

namespace truepeak::estimate {

// A GEMM-like problem in GEMM coordinates: batch x (m x n x k).
struct GemmCoords {
  double batch = 1, m = 1, n = 1, k = 1;
};

// A forward convolution as a framework's choice of implementation sees it
// (RuntimeConvDispatch).
struct ConvCall {
  std::int64_t batch = 0;  // 0: not a forward convolution (no dispatch rule applies)
  double input_elements = 0;  // batch x channels x pixels
  std::int64_t window_h = 1, window_w = 1, stride = 1, groups = 1;
  bool depthwise = false;
  // Runs outside a blocked runtime's channel-blocked layout (its channels fail the layout's rule).
  bool plain = false;
};

// Whether `call` meets every condition of `rule`: it then runs the rule's implementation.
bool runs_dispatched_impl(const RuntimeConvDispatch& rule, const ConvCall& call);

// Whether a product's rows start 16-byte aligned in every operand, as a GPU library's fast kernels
// need: the n outputs of a row (C is m x n) and the k inputs of a row of each operand, in `dtype`.
bool gemm_rows_aligned(DType dtype, double n, double k);

class RateModel {
 public:
  // Throws InputError when the device has nothing for the dtype (no points, no peaks).
  // `conv_layout`: use only convolution points of that layout ("nchw", "nhwc", "blocked");
  // empty: at each measured shape the fastest layout measured.
  // `op_overhead_s`: the per-op overhead to charge instead of the profile's.
  // `typical_times`: each point at its typical time (the median of its quietest look, where the
  // profile records it) rather than its fastest sample.
  // `conv_dispatch`: the runtime's rule for small convolutions. Its conv points then form two
  // sets by their impl, those of the rule's implementation and the others, and a convolution
  // interpolates among the set of the implementation it runs (a framework's path for small
  // calls and its library's differ in rate by 3x at one shape here), the other set where its
  // own has no point of its class.
  RateModel(const Device& device, DType dtype, const std::string& conv_layout = "",
            std::optional<double> op_overhead_s = std::nullopt, bool typical_times = false,
            const std::optional<RuntimeConvDispatch>& conv_dispatch = std::nullopt);

  // Kernel time of one GEMM product that reads and writes `bytes`. Every measured point is held
  // as its efficiency against a reference roofline, max(FLOPs / best measured rate of the dtype,
  // bytes / main-memory bandwidth), the same for every shape: for compute-bound shapes that is the
  // rate over the best rate, for memory-bound ones (a decode step) the effective bandwidth over
  // main memory's. The query's efficiency is interpolated in log-shape space and divides the
  // query's reference roofline; a neighbour counts at most the efficiency the query's own work
  // allows (its roofline over its FLOPs at the best rate): a memory-bound point served from the
  // caches beats main memory's roof, which a compute-bound query cannot. Never faster than the
  // best measured rate of the dtype. Where the
  // operands sit (memory_s) is the cost model's other bound. `cold_weights`: the weights were
  // evicted since their last use (a model larger than the caches); the profile's cold-weight
  // points then stand in for the warm ones of the same shape. On a GPU, a product whose rows are
  // not 16-byte aligned takes the profile's unaligned points where it has some.
  // `flops`: the product's work (a causal attention product does half of its coordinates').
  double gemm_time_s(const GemmCoords& shape, double flops, double bytes,
                     bool cold_weights = false) const;
  // Convolutions (forward, data- and weight-gradient) in implicit-GEMM coordinates, `groups`
  // separating dense, grouped and depthwise: measured conv points of the same class when the
  // profile has them, else the GEMM points (batch = groups). `bytes`: the convolution's own.
  // `stride`: the forward window's (the measured points are forward convolutions; a gradient
  // passes 1). `cold_weights` as for gemm_time_s, with the profile's cold-weight conv points.
  // `in_channels`, `out_channels`: a forward convolution's (0: not known). In the CPU's
  // channel-blocked layout (conv_layout "blocked") a dense or depthwise convolution runs on
  // channels padded to whole blocks (16 with AVX-512, else 8; fewer channels than a block stay
  // plain, as an image does): its points and queries are then held at their padded shapes, with
  // the work and traffic of the padded channels (116 channels run as 128).
  // `call`: a forward convolution's, for the runtime's dispatch rule (conv_dispatch).
  double conv_time_s(const GemmCoords& implicit_gemm, double flops, double bytes,
                     std::int64_t groups, bool depthwise, std::int64_t stride = 1,
                     bool cold_weights = false, std::int64_t in_channels = 0,
                     std::int64_t out_channels = 0, const ConvCall& call = {}) const;
  // Time to move `bytes`, `weight_bytes` of them parameters and `output_bytes` a tensor the op
  // writes to a fresh buffer. Activations come from the level that holds the op's bytes;
  // parameters from the level that holds all of the model's (`model_weight_bytes`): a pass reads
  // each weight once, after every other layer's. On a CPU, an output larger than the caches that
  // keep data, or any output of a model whose weights outgrow them, is written to lines that must
  // be read first: twice its bytes at main-memory bandwidth.
  // `input_bytes`: graph inputs read once a pass, from the level that holds `pass_bytes` (the
  // parameters and the graph inputs).
  double memory_s(double bytes, double weight_bytes = 0, double model_weight_bytes = 0,
                  double output_bytes = 0, double input_bytes = 0, double pass_bytes = 0) const;
  // Time of an op that writes its output over one of its inputs (a runtime's in-place ReLU or
  // residual add): `bytes` moved, `written` of them the output. Its reads, the rest, cost twice
  // their bytes at the in-place bandwidth of the level that holds them: the sweep's update kernel
  // reads each line and writes it back, and the write-back of a line just read barely adds to its
  // time (seen here: an in-place add moved 87 GB/s, its reads at half the update's 115 GB/s).
  // Only where the profile measured in-place levels (has_in_place_levels()); the estimate takes
  // it where it is below memory_s (inside L1 the update kernel runs slower than the triad here).
  double in_place_memory_s(double bytes, double written) const;
  bool has_in_place_levels() const { return !in_place_levels_.empty(); }
  // The rate gemm_time_s gives a GEMM whose operands are read and written once.
  double gemm_flops_per_s(const GemmCoords& shape) const;
  // Elementwise work (norms, activations): the vector FMA peak of the dtype.
  double vector_flops_per_s() const { return vector_flops_per_s_; }
  // Elements per second of the profile's measured vector op `op` in this dtype over a working set
  // (inputs and output) of `working_set_bytes`, or nullopt when the profile has no point of it
  // (gelu_tanh falls back to gelu, add_padded to add, where the profile has none of its own).
  // A working set that the caches hold (largest_cache_bytes) takes the fastest point the caches
  // held; a larger one, the point measured past the caches nearest to it in size, where the
  // profile has one (a layout change from main memory runs at a third of its rate in the caches
  // here), else the same.
  std::optional<double> vector_op_elements_per_s(const std::string& op,
                                                 double working_set_bytes = 0) const;
  // Bandwidth of the smallest memory level that holds `working_set_bytes`.
  double Bps(double working_set_bytes) const;
  double overhead_s() const { return overhead_s_; }
  // The library's own fixed cost per kernel (the profile's per-op overhead), at most overhead_s():
  // a kernel that a runtime op runs after its first pays no dispatch again.
  double library_overhead_s() const { return library_overhead_s_; }
  // The fixed cost of a forward convolution's call on the path it takes (the dispatch rule's
  // implementation or the others): the least the call takes beside its work. nullopt where the
  // runtime has no rule or did not measure that path's cost, or `call` is not a forward
  // convolution's.
  std::optional<double> conv_call_s(const ConvCall& call) const;
  // Whether the device runs an op while the host issues the next (a GPU's stream): then an op
  // costs the longer of its work and its issue time, not their sum.
  bool overlaps_issue() const { return overlaps_issue_; }
  // The largest cache that keeps data (weights, outputs) between uses: the largest level measured
  // at least kCacheAdvantage times faster than main memory (0 when there is none), or the largest
  // working set inside it that the triad sweep measured that fast when a larger one inside it ran
  // slower (then the level itself ends there too).
  double largest_cache_bytes() const { return largest_cache_bytes_; }
  static constexpr double kCacheAdvantage = 2.0;

  // Channels a block of oneDNN's channel-blocked layout on this device (16 with AVX-512, else 8;
  // 0 on a GPU).
  std::int64_t blocked_channels() const { return blocked_channels_; }

  // The roofs for "% of peak": best measured GEMM rate and best bandwidth (DRAM/HBM).
  double best_flops_per_s() const { return best_flops_per_s_; }
  double best_Bps() const { return dram_Bps_; }

  // Naive roofline: datasheet peaks (falling back to measured peaks where the datasheet is silent).
  double naive_matrix_flops_per_s() const { return naive_matrix_; }
  double naive_vector_flops_per_s() const { return naive_vector_; }
  double naive_Bps() const { return naive_Bps_; }

  // Interpolation over an arbitrary point set (exposed for tests): inverse-distance weighting of
  // the log values of the nearest points in (log2 batch, log2 m, log2 n, log2 k, stride), the
  // query first clamped into the measured box; returns the value (exp of the weighted mean).
  // The stride coordinate is a convolution's (a multiple of log2 stride; 0 for GEMMs and
  // unstrided convolutions). Each neighbour's log value counts at most `max_log_value`.
  using Coords = std::array<double, 5>;
  struct Point {
    Coords x;
    double log_value = 0;
  };
  static double interpolate(const std::vector<Point>& points, Coords query,
                            double max_log_value = std::numeric_limits<double>::infinity());

 private:
  double roofline_s(double flops, double bytes) const;
  // Pads a dense or depthwise convolution's implicit-GEMM coordinates `s` to whole channel
  // blocks (channel_block_; 0: none); returns its work and its traffic over the unpadded one's
  // (the traffic: the larger of the input's and the output's growth, the activations').
  std::pair<double, double> pad_channels(GemmCoords& s, std::int64_t in_channels,
                                         std::int64_t out_channels, std::int64_t groups,
                                         bool depthwise) const;
  double product_s(const std::vector<Point>& points, const Coords& query,
                   double flops, double bytes) const;

  DType dtype_;
  std::int64_t channel_block_ = 0;  // channels a block of the blocked conv layout (0: not padded)
  std::int64_t blocked_channels_ = 0;  // channels a block of oneDNN's blocked layout (CPU; else 0)
  std::vector<Point> gemm_points_;       // log efficiency, warm caches
  std::vector<Point> gemm_cold_points_;  // the same with cold-weight measurements where made
  // A GPU's points whose rows are not 16-byte aligned (gemm_rows_aligned): a library runs such
  // products in kernels of their own, far slower (an odd vocabulary's head). Empty elsewhere, or
  // where the profile measured none: such products then take the aligned points.
  std::vector<Point> gemm_unaligned_points_;
  double largest_cache_bytes_ = 0;
  // Conv points by class: 0 dense (groups 1), 1 grouped, 2 depthwise.
  struct ConvPoints {
    std::array<std::vector<Point>, 3> warm;
    std::array<std::vector<Point>, 3> cold;  // with cold-weight measurements where made
  };
  // By the implementation a point ran: [0] the runtime's library (or all), [1] the dispatch
  // rule's, [2] a blocked runtime's plain kernels (its `nchw` points).
  std::array<ConvPoints, 3> conv_points_;
  std::optional<RuntimeConvDispatch> conv_dispatch_;
  bool batched_gemm_points_ = false;
  double best_flops_per_s_ = 0;
  double vector_flops_per_s_ = 0;
  // op -> (working set bytes, elements/s) of its points in this dtype, by working set
  std::map<std::string, std::vector<std::pair<double, double>>> vector_op_rates_;
  std::vector<std::pair<double, double>> levels_;  // (bytes, Bps) ascending; last = DRAM
  std::vector<std::pair<double, double>> in_place_levels_;  // the same for the update kernel
  double dram_Bps_ = 0;
  double overhead_s_ = 0;
  double library_overhead_s_ = 0;
  bool overlaps_issue_ = false;
  // A store reads its line first (a CPU), and the main-memory figure is of streaming stores,
  // which do not: a cold output's read is not in that figure.
  bool write_allocate_ = false;
  double naive_matrix_ = 0, naive_vector_ = 0, naive_Bps_ = 0;
};

// A convolution point's class, which the rate model fits apart: 0 dense (groups 1), 1 grouped,
// 2 depthwise (a group a channel, in and out).
int conv_point_class(const ConvShape& s);

}  // namespace truepeak::estimate
