#include "estimate/rates.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "core/backend.hpp"
#include "core/error.hpp"

namespace truepeak::estimate {
namespace {

// The largest working set that the triad sweep measured at `fast_Bps` or more, at most
// `cache_bytes`, when a larger one inside `cache_bytes` ran slower; else `cache_bytes`.
double cache_holds_bytes(const std::vector<MemoryPoint>& sweep, double cache_bytes,
                         double fast_Bps) {
  double held = 0, slow = 0;
  for (const auto& p : sweep) {
    const auto bytes = static_cast<double>(p.bytes);
    if (p.kernel != "triad" || bytes > cache_bytes || !(p.Bps > 0)) continue;
    if (p.Bps >= fast_Bps)
      held = std::max(held, bytes);
    else
      slow = std::max(slow, bytes);
  }
  return held > 0 && slow > held ? held : cache_bytes;
}

constexpr std::size_t kNeighbours = 4;

std::optional<double> lookup(const std::map<std::string, double>& m, DType dtype) {
  auto it = m.find(std::string(to_string(dtype)));
  if (it == m.end() || !(it->second > 0)) return std::nullopt;
  return it->second;
}

// A convolution's stride counts kStrideScale units per factor of two: a strided kernel reads its
// input with gaps, so a stride-2 layer runs apart from an unstrided one of the same GEMM shape
// (a depthwise 3x3 at half the rate here), and the measured points of its own stride lead.
constexpr double kStrideScale = 2.0;

RateModel::Coords coords(double batch, double m, double n, double k, double stride = 1) {
  return {std::log2(std::max(batch, 1.0)), std::log2(std::max(m, 1.0)), std::log2(std::max(n, 1.0)),
          std::log2(std::max(k, 1.0)), kStrideScale * std::log2(std::max(stride, 1.0))};
}

int conv_class(std::int64_t groups, bool depthwise) {
  return groups == 1 ? 0 : (depthwise ? 2 : 1);
}

}  // namespace

int conv_point_class(const ConvShape& s) {
  return conv_class(s.groups, s.groups == s.c && s.groups == s.k);
}

std::optional<double> RateModel::vector_op_elements_per_s(const std::string& op,
                                                          double working_set_bytes) const {
  auto it = vector_op_rates_.find(op);
  // A profile without the tanh form (before 1.5, the quick suite, a skipped point) lends it the
  // erf form's rate; one without the padded add (before 1.9, the quick suite), the add's.
  if (it == vector_op_rates_.end() && op == "gelu_tanh") it = vector_op_rates_.find("gelu");
  if (it == vector_op_rates_.end() && op == "add_padded") it = vector_op_rates_.find("add");
  if (it == vector_op_rates_.end()) return std::nullopt;
  double held = 0, past = 0, nearest = std::numeric_limits<double>::infinity();
  for (const auto& [bytes, rate] : it->second) {
    if (bytes <= largest_cache_bytes_) {
      held = std::max(held, rate);
    } else if (const double apart = std::fabs(std::log(bytes / std::max(working_set_bytes, 1.0)));
               apart < nearest || (apart == nearest && rate > past)) {
      nearest = apart;
      past = rate;
    }
  }
  if (working_set_bytes > largest_cache_bytes_ && past > 0) return past;
  return held > 0 ? held : past;
}

double RateModel::interpolate(const std::vector<Point>& points, Coords query,
                              double max_log_value) {
  if (points.empty()) return 0;
  // Clamp into the measured box: outside the measured range the value is that of the nearest
  // measured shapes, so it can never extrapolate past what was measured.
  for (std::size_t d = 0; d < query.size(); ++d) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& p : points) {
      lo = std::min(lo, p.x[d]);
      hi = std::max(hi, p.x[d]);
    }
    query[d] = std::clamp(query[d], lo, hi);
  }
  // Nearest neighbours by Euclidean distance in log2 space (one unit = a factor of two).
  std::vector<std::pair<double, double>> near;  // (squared distance, log value)
  near.reserve(points.size());
  for (const auto& p : points) {
    double d2 = 0;
    for (std::size_t d = 0; d < query.size(); ++d) d2 += (p.x[d] - query[d]) * (p.x[d] - query[d]);
    near.emplace_back(d2, std::min(p.log_value, max_log_value));
  }
  const std::size_t count = std::min(kNeighbours, near.size());
  std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(count), near.end());
  if (near.front().first < 1e-12) return std::exp(near.front().second);
  // Inverse-distance weights (power 2) on the logarithm: a weighted geometric mean, so the
  // result always lies between the neighbours' values.
  double wsum = 0, acc = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double w = 1.0 / near[i].first;
    wsum += w;
    acc += w * near[i].second;
  }
  return std::exp(acc / wsum);
}

RateModel::RateModel(const Device& device, DType dtype, const std::string& conv_layout,
                     std::optional<double> op_overhead_s, bool typical_times,
                     const std::optional<RuntimeConvDispatch>& conv_dispatch)
    : dtype_(dtype), conv_dispatch_(conv_dispatch) {
  // A point's rate: at its fastest sample; with `typical_times`, at its typical time where the
  // profile has it (the median of its quietest look: what a kernel takes as one of a model's many,
  // each with its ordinary jitter). The best rate of a dtype, the ceiling of every product, stays
  // the fastest.
  const auto typical = [&](double fastest_rate, const Timing& t) {
    return typical_times && t.typical_s > 0 && t.time_s > 0 ? fastest_rate * t.time_s / t.typical_s
                                                               : fastest_rate;
  };
  const std::string dt(to_string(dtype));
  if (device.kind == "cpu") {
    blocked_channels_ = cpu_channel_block(device.properties);
    if (conv_layout == "blocked") channel_block_ = blocked_channels_;
  }
  const auto conv_measured = [&](const ConvPoint& c) { return c.shape.dtype == dtype && c.flops_per_s > 0; };
  const auto conv_used = [&](const ConvPoint& c) {
    return conv_measured(c) && (conv_layout.empty() || c.layout == conv_layout);
  };
  double best_point = 0;
  for (const auto& g : device.gemm) {
    if (g.shape.dtype != dtype || !(g.flops_per_s > 0)) continue;
    best_point = std::max(best_point, g.flops_per_s);
    if (g.shape.batch > 1) batched_gemm_points_ = true;
  }
  for (const auto& c : device.conv)
    if (conv_used(c)) best_point = std::max(best_point, c.flops_per_s);
  best_flops_per_s_ = std::max(best_point, lookup(device.peaks.flops_per_s, dtype).value_or(0));
  if (!(best_flops_per_s_ > 0))
    throw InputError(
        fmt::format("profile device '{}' has no measured GEMM/conv points and no peak for {}: "
                    "calibrate this dtype or choose another with --dtype",
                    device.id, dt));

  vector_flops_per_s_ =
      lookup(device.peaks.vector_flops_per_s, dtype)
          .value_or(lookup(device.peaks.vector_flops_per_s, DType::f32).value_or(0));
  if (!(vector_flops_per_s_ > 0))
    vector_flops_per_s_ =
        lookup(device.datasheet.vector_flops_per_s, dtype).value_or(best_flops_per_s_);

  for (const auto& v : device.vector_ops) {
    if (v.dtype != dtype || !(v.elements_per_s > 0)) continue;
    const double bytes = VectorOpShape{v.op, v.dtype, v.rows, v.cols}.bytes();
    vector_op_rates_[v.op].emplace_back(bytes, typical(v.elements_per_s, v.timing));
  }

  for (const auto& l : device.memory_levels) {
    if (!(l.Bps > 0)) continue;
    levels_.emplace_back(
        l.bytes ? static_cast<double>(*l.bytes) : std::numeric_limits<double>::infinity(), l.Bps);
  }
  std::sort(levels_.begin(), levels_.end());
  if (levels_.empty() || std::isfinite(levels_.back().first)) {
    // No unbounded level: main memory is the measured peak bandwidth.
    const double dram =
        device.peaks.memory_Bps.value_or(levels_.empty() ? 0 : levels_.back().second);
    if (dram > 0) levels_.emplace_back(std::numeric_limits<double>::infinity(), dram);
  }
  if (levels_.empty())
    throw InputError(fmt::format(
        "profile device '{}' has no measured memory bandwidth (memory.levels or peaks.memory_Bps)",
        device.id));
  // A level that holds the working set serves it at least as fast as the larger levels behind it
  // would: a cache measured slower than main memory (timer-bound tiny sizes) never slows an op.
  for (std::size_t i = levels_.size() - 1; i-- > 0;)
    levels_[i].second = std::max(levels_[i].second, levels_[i + 1].second);
  dram_Bps_ = levels_.back().second;
  for (const auto& l : device.memory_in_place_levels)
    if (l.Bps > 0)
      in_place_levels_.emplace_back(
          l.bytes ? static_cast<double>(*l.bytes) : std::numeric_limits<double>::infinity(), l.Bps);
  std::sort(in_place_levels_.begin(), in_place_levels_.end());
  for (std::size_t i = in_place_levels_.size(); i-- > 1;)
    in_place_levels_[i - 1].second = std::max(in_place_levels_[i - 1].second, in_place_levels_[i].second);
  overhead_s_ = op_overhead_s.value_or(device.overhead_op_s.value_or(0));
  library_overhead_s_ = std::min(overhead_s_, device.overhead_op_s.value_or(overhead_s_));
  overlaps_issue_ = device.kind == "gpu";
  // A GPU's L2 takes whole-sector writes without a read. A CPU's main-memory triad that stored
  // regularly holds the reads of its lines already (profiles before `main_memory_stores` used
  // streaming stores wherever AVX-512 was there).
  if (device.kind == "cpu") {
    const auto& p = device.properties;
    if (p.contains("main_memory_stores") && p["main_memory_stores"].is_string())
      write_allocate_ = p["main_memory_stores"] == "streaming";
    else
      write_allocate_ = cpu_has_avx512(p);
  }

  // Each measured point as its efficiency: the time its reference roofline allows over the time
  // it took.
  // A point whose work or traffic is not positive (a malformed profile) tells nothing: skipped.
  const auto efficiency = [&](double flops, double bytes,
                              double flops_per_s) -> std::optional<double> {
    if (!(flops > 0 && bytes > 0 && flops_per_s > 0)) return std::nullopt;
    const double e = std::log(roofline_s(flops, bytes) / (flops / flops_per_s));
    return std::isfinite(e) ? std::optional<double>(e) : std::nullopt;
  };
  // A cold-weight point is taken as measured. Its weights may cost more than one read from main
  // memory: a blocked convolution kernel passes over its weight blocks once per tile of the output
  // (a 512-channel 3x3 on 7x7 at batch 1, 9.4 MB of weights: 0.48 ms warm, 0.76 cold, 0.79 inside
  // ResNet-18 on a Zen 5 VM, where one more read of the weights would allow 0.62).
  std::vector<Point> cold;
  for (const auto& g : device.gemm) {
    if (g.shape.dtype != dtype) continue;
    const double rate = typical(g.flops_per_s, g.timing);
    const auto e = efficiency(g.shape.flops(), g.shape.bytes(), rate);
    if (!e) continue;
    const double b = static_cast<double>(g.shape.batch);
    const auto x = batched_gemm_points_ ? coords(b, g.shape.m, g.shape.n, g.shape.k)
                                        : coords(1, b * g.shape.m, g.shape.n, g.shape.k);
    const bool unaligned = device.kind == "gpu" && !gemm_rows_aligned(
        dtype, static_cast<double>(g.shape.n), static_cast<double>(g.shape.k));
    (unaligned ? gemm_unaligned_points_ : g.cold_weights ? cold : gemm_points_).push_back({x, *e});
  }
  // A blocked runtime's plain points: the convolutions its channel rule leaves out of the layout.
  const auto plain_point = [&](const ConvPoint& c) {
    return conv_layout == "blocked" && c.layout == "nchw" && conv_measured(c);
  };
  for (const auto& c : device.conv) {
    const bool plain = plain_point(c);
    if (!conv_used(c) && !plain) continue;
    const auto& s = c.shape;
    const bool depthwise = s.groups == s.c && s.groups == s.k;
    GemmCoords g{static_cast<double>(s.groups), static_cast<double>(s.n * s.out_h() * s.out_w()),
                 static_cast<double>(s.k / s.groups), static_cast<double>(s.c / s.groups * s.r * s.s)};
    // At its padded shape, with the padded work in its measured time (a plain point: unpadded).
    const auto [f, fb] = plain ? std::pair{1.0, 1.0} : pad_channels(g, s.c, s.k, s.groups, depthwise);
    const double rate = typical(c.flops_per_s, c.timing);
    const auto e = efficiency(s.flops() * f, s.bytes() * fb, rate * f);
    if (!e) continue;
    const auto cls = static_cast<std::size_t>(conv_point_class(s));
    const std::size_t set = plain ? 2 : conv_dispatch_ && c.impl == conv_dispatch_->impl ? 1 : 0;
    (c.cold_weights ? conv_points_[set].cold : conv_points_[set].warm)[cls]
        .push_back({coords(g.batch, g.m, g.n, g.k, static_cast<double>(s.stride)), *e});
  }
  // One value per measured shape: several layouts (or repeats) of one shape keep the fastest.
  auto dedupe = [](std::vector<Point>& points) {
    std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
      return a.x != b.x ? a.x < b.x : a.log_value > b.log_value;
    });
    points.erase(std::unique(points.begin(), points.end(),
                             [](const Point& a, const Point& b) { return a.x == b.x; }),
                 points.end());
  };
  dedupe(gemm_points_);
  dedupe(gemm_unaligned_points_);
  for (auto& set : conv_points_)
    for (auto& c : set.warm) dedupe(c);
  // With cold weights: the warm points, each replaced by its cold measurement where there is one.
  const auto with_cold = [&](const std::vector<Point>& warm, std::vector<Point> cold_points) {
    dedupe(cold_points);
    std::vector<Point> out = cold_points;
    for (const auto& p : warm)
      if (!std::binary_search(cold_points.begin(), cold_points.end(), p,
                              [](const Point& a, const Point& b) { return a.x < b.x; }))
        out.push_back(p);
    return out;
  };
  // Weights read from memory can only add time: a cold measurement faster than its warm twin
  // finds the warm one taken in a slow spell (here an f32 stride-2 3x3 measured at 224 GFLOP/s
  // warm and 321 cold), and the warm point takes the cold figure.
  const auto bound_by_cold = [](std::vector<Point>& warm, const std::vector<Point>& cold_points) {
    for (auto& p : warm)
      for (const auto& c : cold_points)
        if (c.x == p.x) p.log_value = std::max(p.log_value, c.log_value);
  };
  gemm_cold_points_ = with_cold(gemm_points_, cold);
  bound_by_cold(gemm_points_, gemm_cold_points_);
  for (auto& points : conv_points_)
    for (std::size_t cls = 0; cls < points.warm.size(); ++cls) {
      // points.cold held the cold measurements alone until here.
      points.cold[cls] = with_cold(points.warm[cls], points.cold[cls]);
      bound_by_cold(points.warm[cls], points.cold[cls]);
    }
  // The caches that keep a model's weights between passes: those the sweep measured at least
  // kCacheAdvantage times faster than main memory. A level barely faster than memory (the share
  // of a shared last-level cache that a VM really gets) holds little of what it is said to.
  for (const auto& l : device.memory_levels)
    if (l.bytes && l.Bps >= kCacheAdvantage * dram_Bps_)
      largest_cache_bytes_ = std::max(largest_cache_bytes_, static_cast<double>(*l.bytes));
  // What that cache really holds: a VM's share of a last-level cache that other tenants use too
  // can end well before its size. Where the triad sweep measured a working set inside the cache's
  // size at less than kCacheAdvantage times main memory, the cache holds only the largest working
  // set measured that fast (a 32 MiB L3 here served 16 MiB at 2.3x main memory, 24 MiB at 1.4x),
  // and larger working sets take main memory's rate.
  const double held =
      cache_holds_bytes(device.memory_sweep, largest_cache_bytes_, kCacheAdvantage * dram_Bps_);
  if (held < largest_cache_bytes_) {
    // Levels past what it holds end there; where two then end together, the faster serves.
    const auto shrink = [&](std::vector<std::pair<double, double>>& levels) {
      for (auto& level : levels)
        if (level.first > held && level.first <= largest_cache_bytes_) level.first = held;
      std::sort(levels.begin(), levels.end(), [](const auto& a, const auto& b) {
        return a.first < b.first || (a.first == b.first && a.second > b.second);
      });
    };
    shrink(levels_);
    shrink(in_place_levels_);
    largest_cache_bytes_ = held;
  }

  naive_matrix_ = lookup(device.datasheet.flops_per_s, dtype).value_or(best_flops_per_s_);
  naive_vector_ = lookup(device.datasheet.vector_flops_per_s, dtype)
                      .value_or(lookup(device.datasheet.vector_flops_per_s, DType::f32)
                                    .value_or(vector_flops_per_s_));
  naive_Bps_ = device.datasheet.memory_Bps.value_or(dram_Bps_);
}

double RateModel::roofline_s(double flops, double bytes) const {
  return std::max(flops / best_flops_per_s_, bytes / dram_Bps_);
}

double RateModel::memory_s(double bytes, double weight_bytes, double model_weight_bytes,
                           double output_bytes, double input_bytes, double pass_bytes) const {
  if (!(bytes > 0)) return 0;
  weight_bytes = std::clamp(weight_bytes, 0.0, bytes);
  input_bytes = std::clamp(input_bytes, 0.0, bytes - weight_bytes);
  output_bytes = std::clamp(output_bytes, 0.0, bytes - weight_bytes - input_bytes);
  // Where a store first reads the line it writes and the main-memory figure holds no such reads
  // (write_allocate_), an output written to memory the caches no longer hold costs its bytes
  // twice at main-memory bandwidth: the line read, then written back. The buffer was last used a
  // pass ago (or more layers back than the caches span) when the pass outgrows the caches, as
  // for the weights, or when the output alone does. Any other output counts with the activations.
  const bool cold_output = write_allocate_ && output_bytes > 0 &&
                           std::max(output_bytes, model_weight_bytes) > largest_cache_bytes_;
  if (!cold_output) output_bytes = 0;
  return (bytes - weight_bytes - input_bytes - output_bytes) / Bps(bytes) +
         weight_bytes / Bps(std::max(bytes, model_weight_bytes)) +
         input_bytes / Bps(std::max({bytes, model_weight_bytes, pass_bytes})) +
         2 * output_bytes / dram_Bps_;
}

double RateModel::product_s(const std::vector<Point>& points, const Coords& query,
                            double flops, double bytes) const {
  const double roof = roofline_s(flops, bytes);
  if (points.empty()) return roof;
  // A neighbour's efficiency counts up to the query's own ceiling: a 1x1 convolution of 16 to 96
  // channels measured on 112x112 from the caches beats the main-memory roof by 1.19x, but lends
  // a compute-bound layer of 64 to 256 channels at batch 8 no more than the best rate. And never
  // faster than the best measured rate, even where a point beat its reference roof.
  const double ceiling = std::log(roof / (flops / best_flops_per_s_));
  return std::max(roof / interpolate(points, query, ceiling), flops / best_flops_per_s_);
}

bool runs_dispatched_impl(const RuntimeConvDispatch& rule, const ConvCall& call) {
  if (call.batch < 1) return false;
  const auto window = rule.window_smaller_side ? std::min(call.window_h, call.window_w)
                                               : std::max(call.window_h, call.window_w);
  const bool grouping_stays =
      call.groups == 1 || (call.depthwise ? rule.depthwise : rule.grouped);
  return call.batch <= rule.max_batch && window <= rule.max_window &&
         (!rule.max_input_elements ||
          call.input_elements <= static_cast<double>(*rule.max_input_elements)) &&
         (call.stride == 1 || rule.strided) && grouping_stays;
}

std::optional<double> RateModel::conv_call_s(const ConvCall& call) const {
  if (!conv_dispatch_ || call.batch < 1) return std::nullopt;
  return runs_dispatched_impl(*conv_dispatch_, call) ? conv_dispatch_->op_s : conv_dispatch_->others_op_s;
}

bool gemm_rows_aligned(DType dtype, double n, double k) {
  const double bytes = dtype_bytes(dtype);
  return std::fmod(n * bytes, 16.0) == 0 && std::fmod(k * bytes, 16.0) == 0;
}

double RateModel::gemm_time_s(const GemmCoords& s, double flops, double bytes,
                              bool cold_weights) const {
  const auto q =
      batched_gemm_points_ ? coords(s.batch, s.m, s.n, s.k) : coords(1, s.batch * s.m, s.n, s.k);
  if (!gemm_unaligned_points_.empty() && !gemm_rows_aligned(dtype_, s.n, s.k))
    return product_s(gemm_unaligned_points_, q, flops, bytes);
  return product_s(cold_weights ? gemm_cold_points_ : gemm_points_, q, flops, bytes);
}

std::pair<double, double> RateModel::pad_channels(GemmCoords& s, std::int64_t in_channels,
                                                  std::int64_t out_channels, std::int64_t groups,
                                                  bool depthwise) const {
  if (channel_block_ <= 0 || in_channels <= 0 || out_channels <= 0) return {1, 1};
  if (groups > 1 && !depthwise) return {1, 1};  // blocked by the group's width, unpadded
  const auto padded = [&](std::int64_t c) {
    return static_cast<double>(c < channel_block_ ? c : (c + channel_block_ - 1) / channel_block_ * channel_block_);
  };
  const double c = static_cast<double>(in_channels), pc = padded(in_channels);
  if (depthwise) {
    s.batch = pc;  // one group a channel
    return {pc / c, pc / c};
  }
  const double k = static_cast<double>(out_channels), pk = padded(out_channels);
  s.n = pk;
  s.k = s.k / c * pc;
  return {pc / c * (pk / k), std::max(pc / c, pk / k)};
}

double RateModel::conv_time_s(const GemmCoords& s, double flops, double bytes,
                              std::int64_t groups, bool depthwise, std::int64_t stride,
                              bool cold_weights, std::int64_t in_channels,
                              std::int64_t out_channels, const ConvCall& call) const {
  const auto cls = static_cast<std::size_t>(conv_class(groups, depthwise));
  const auto of_set = [&](std::size_t set) -> const std::vector<Point>& {
    return cold_weights ? conv_points_[set].cold[cls] : conv_points_[set].warm[cls];
  };
  // A call the blocked layout leaves plain: the plain points of its class, unpadded, where the
  // profile has some.
  GemmCoords q = s;
  if (call.plain && !of_set(2).empty())
    return product_s(of_set(2), coords(q.batch, q.m, q.n, q.k, static_cast<double>(stride)), flops, bytes);
  // The set of the implementation the call runs, the other where that one has no point.
  const std::size_t own = conv_dispatch_ && runs_dispatched_impl(*conv_dispatch_, call) ? 1 : 0;
  const auto& points = of_set(own).empty() ? of_set(1 - own) : of_set(own);
  if (points.empty()) return gemm_time_s(s, flops, bytes, cold_weights);
  const auto [f, fb] = pad_channels(q, in_channels, out_channels, groups, depthwise);
  return product_s(points, coords(q.batch, q.m, q.n, q.k, static_cast<double>(stride)), flops * f,
                   bytes * fb);
}

double RateModel::gemm_flops_per_s(const GemmCoords& s) const {
  const GemmShape shape{dtype_, static_cast<std::int64_t>(s.m), static_cast<std::int64_t>(s.n),
                        static_cast<std::int64_t>(s.k), static_cast<std::int64_t>(s.batch)};
  return shape.flops() / gemm_time_s(s, shape.flops(), shape.bytes());
}

double RateModel::in_place_memory_s(double bytes, double written) const {
  const double read = std::max(0.0, bytes - std::clamp(written, 0.0, bytes));
  if (!(read > 0) || in_place_levels_.empty()) return 0;
  for (const auto& [level_bytes, Bps] : in_place_levels_)
    if (read <= level_bytes) return 2 * read / Bps;
  return 2 * read / in_place_levels_.back().second;
}

double RateModel::Bps(double working_set_bytes) const {
  for (const auto& [bytes, Bps] : levels_)
    if (working_set_bytes <= bytes) return Bps;
  return dram_Bps_;
}

}  // namespace truepeak::estimate
