// DeviceRun's later looks and quiet spells: second and last looks, closing bursts, confirmation.
#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "calibrate/device_run.hpp"
#include "core/units.hpp"

namespace truepeak::driver_detail {

// `work`: of one run, when it is not the kernel's FLOPs (a vector op's elements).
void DeviceRun::keep_for_revisit(const std::string& klass, const std::string& what, PeakWatch::Make make,
                                 Revisit::Kind kind, std::size_t index, const Measured& m, double work) {
  Revisit r{klass, what, std::move(make), kind, index, work >= 0 ? work : m.flops, m.samples};
  if (plan_.revisit_max_s > 0 && m.summary.min_s <= plan_.revisit_max_s) {
    revisits_.push_back(std::move(r));
    return;
  }
  no_revisit();
  if (kind == Revisit::Kind::conv && m.summary.min_s <= plan_.last_look_max_s)
    final_candidates_.push_back(std::move(r));
}

// A point with no second look (failed, or too long): its share of the progress total is done.
void DeviceRun::no_revisit() {
  if (plan_.revisit_max_s > 0) ++done_points_;
}

// Interference comes and goes over seconds to minutes: a point measured once may have been
// measured in a busy spell. Each point kept for it is measured once more, minutes after its
// first look; when the second look finds a faster sample, the point's figures become those of
// both looks' samples together (the fastest is its capability figure). Peak-watch candidates
// are skipped: their bursts and confirmation are many more looks.
void DeviceRun::revisit() {
  for (auto& r : revisits_) {
    if (stopped()) break;
    if (watch_.holds(r.what)) {
      ++done_points_;
      continue;
    }
    if (!fits(r)) {
      ++left_out_.second_looks;
      ++done_points_;
      continue;
    }
    r.second_look = look_again(r, "revisit ");
  }
  // The convolutions keep theirs for a last look at the best layers, the products of few rows
  // that had their second look for a last look of their own.
  for (auto& r : revisits_) {
    if (r.kind == Revisit::Kind::conv)
      final_candidates_.push_back(std::move(r));
    else if (r.kind == Revisit::Kind::gemm && r.second_look &&
             device_.gemm[r.index].shape.m <= plan_.last_look_gemm_rows)
      gemm_last_looks_.push_back(std::move(r));
  }
  revisits_.clear();
}

// Whether one more look at `r` fits in the time left.
bool DeviceRun::fits(const Revisit& r) const { return time_left_s() >= look_time_s(r); }

// About how long one more look at `r` takes.
double DeviceRun::look_time_s(const Revisit& r) const {
  return expected_time_s(plan_.revisit_rule, median(r.samples));
}

// A last look at `r` where it fits (one more draw: no sentinel re-measures), else counted as
// left out for the deadline. 1 when it was measured.
int DeviceRun::last_look(Revisit& r) {
  if (!fits(r)) {
    ++left_out_.last_looks;
    ++done_points_;
    return 0;
  }
  return look_again(r, "last look ", false);
}

// Measures a revisit point once more (`label` names the look in progress lines); its figures
// become those of all its looks' samples when this look found a faster sample.
// `remeasure`: as point()'s. False when the point could not be measured.
bool DeviceRun::look_again(Revisit& r, const std::string& label, bool remeasure) {
  auto m = point(r.klass, label + r.what, plan_.revisit_rule, r.make, remeasure);
  if (!m) return false;
  r.samples.insert(r.samples.end(), m->samples.begin(), m->samples.end());
  Summary all = summarize(r.samples);
  // The point's figures may already hold more than its first look (bursts, while it was a
  // candidate): they change only when the second look found a faster sample. Its typical
  // time is the lower of the looks' medians either way.
  const auto typical = [&](const Timing& t) {
    return t.typical_s > 0 ? std::min(t.typical_s, m->summary.typical_s) : m->summary.typical_s;
  };
  const auto update = [&](auto& p) {
    all.typical_s = typical(p.timing);
    if (all.min_s < p.timing.time_s) set_figures(p, r.work, all, m->impl, m->layout);
    p.timing.typical_s = all.typical_s;
    return p.flops_per_s;
  };
  switch (r.kind) {
    case Revisit::Kind::gemm: {
      auto& p = device_.gemm[r.index];
      const double rate = update(p);
      if (!p.cold_weights) {
        auto& best = device_.peaks.flops_per_s[std::string(to_string(p.shape.dtype))];
        best = std::max(best, p.flops_per_s);
      }
      progress(label + r.what, format_flops_per_s(rate));
      break;
    }
    case Revisit::Kind::conv:
      progress(label + r.what, format_flops_per_s(update(device_.conv[r.index])));
      break;
    case Revisit::Kind::vector_op: {
      auto& p = device_.vector_ops[r.index];
      all.typical_s = typical(p.timing);
      if (all.min_s < p.timing.time_s) {
        p.timing = timing_of(all);
        p.elements_per_s = r.work / all.min_s;
        p.impl = m->impl;
      }
      p.timing.typical_s = all.typical_s;
      progress(label + r.what, format_elements_per_s(p.elements_per_s));
      break;
    }
  }
  return true;
}

// The convolution points the last look measures: those within the plan's margin of their
// dtype's best, fastest first, up to the plan's count per dtype (Plan::final_look_within), then
// those far behind a twin in another layout (Plan::twin_look_gap).
std::vector<DeviceRun::Revisit*> DeviceRun::final_look_points() {
  std::vector<Revisit*> out = near_best_points();
  const auto twins = behind_twin_points(out);
  out.insert(out.end(), twins.begin(), twins.end());
  return out;
}

std::vector<DeviceRun::Revisit*> DeviceRun::near_best_points() {
  if (plan_.final_look_within <= 0 || plan_.final_looks <= 0) return {};
  std::map<DType, double> best;
  for (const auto& c : device_.conv)
    if (!c.cold_weights) best[c.shape.dtype] = std::max(best[c.shape.dtype], c.flops_per_s);
  RankedByDtype by_dtype;  // fastest first
  for (auto& r : final_candidates_) {
    const auto& c = device_.conv[r.index];
    if (!c.cold_weights && !watch_.holds(r.what) &&
        c.flops_per_s >= (1 - plan_.final_look_within) * best[c.shape.dtype])
      by_dtype[c.shape.dtype].emplace_back(-c.flops_per_s, &r);
  }
  return first_of_each_dtype(by_dtype);
}

// The convolution points (not among `taken`) slower than their fastest twin by more than the
// plan's gap, the widest first, up to the plan's count per dtype. A twin is any other warm point
// of the same layer: another layout, or the same one reached another way (oneDNN's own choice
// may run blocked).
std::vector<DeviceRun::Revisit*> DeviceRun::behind_twin_points(const std::vector<Revisit*>& taken) {
  if (plan_.twin_look_gap <= 0 || plan_.final_looks <= 0) return {};
  const auto counts = [](const ConvPoint& c) { return !c.cold_weights && c.layout != "nchw" && c.flops_per_s > 0; };
  RankedByDtype by_dtype;  // (rate / twin's, point)
  for (auto& r : final_candidates_) {
    const auto& c = device_.conv[r.index];
    if (!counts(c) || watch_.holds(r.what) || std::find(taken.begin(), taken.end(), &r) != taken.end())
      continue;
    double twin = 0;
    for (const auto& other : device_.conv)
      if (counts(other) && other.shape == c.shape && &other != &c)
        twin = std::max(twin, other.flops_per_s);
    if (twin > 0 && c.flops_per_s < (1 - plan_.twin_look_gap) * twin)
      by_dtype[c.shape.dtype].emplace_back(c.flops_per_s / twin, &r);
  }
  return first_of_each_dtype(by_dtype);
}

// The plan's count of last looks per dtype, lowest rank first (ties in the candidates' order).
std::vector<DeviceRun::Revisit*> DeviceRun::first_of_each_dtype(RankedByDtype& by_dtype) const {
  std::vector<Revisit*> out;
  for (auto& [dtype, points] : by_dtype) {
    std::stable_sort(points.begin(), points.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    if (points.size() > static_cast<std::size_t>(plan_.final_looks)) points.resize(plan_.final_looks);
    for (const auto& p : points) out.push_back(p.second);
  }
  return out;
}

// Interference on a shared host comes and goes over minutes (other tenants' memory traffic is
// invisible to a compute sentinel), and it only ever adds time. So the points behind the
// headline peaks are measured once more at the end, every sample counting: the capability
// figure is the fastest seen over the whole calibration (the peak watch's bursts included).
// Waits, up to the plan's budget, until the sentinel is as fast as it has ever been, so that
// the headline points are measured again in a quiet spell if one comes.
void DeviceRun::wait_for_quiet() {
  if (!sentinel_ || plan_.quiet_wait_s <= 0) return;
  const double budget = std::clamp(time_left_s(), 0.0, plan_.quiet_wait_s);
  const auto start = Clock::now();
  double waited = 0;
  bool quiet = false;
  while (!stopped() && !(quiet = sentinel_->quiet(options_.stop)) && waited < budget) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    waited = std::chrono::duration<double>(Clock::now() - start).count();
  }
  // What the deadline took from a wait that ran out without finding a quiet machine.
  if (!quiet && !stopped()) left_out_.quiet_wait_s = plan_.quiet_wait_s - budget;
  device_.conditions["quiet_wait_s"] = waited;
  if (waited > 0)
    say(fmt::format("[{}] waited {:.1f} s for a quiet machine before confirming the peaks", tag_,
                    waited));
}

// A main-memory sweep point measured again after the watch's confirmation, or a triad point of
// the last-level cache where the plan says so.
bool DeviceRun::confirms_after_watch(const MemoryPoint& p, std::int64_t device_memory_from) const {
  if (confirms_in_last_cache(p.kernel, p.bytes)) return true;
  if (p.bytes < device_memory_from || p.kernel == "d2d_copy" || !stream_op_named(p.kernel)) return false;
  // With bursts, the main-memory triad points were the watch's to confirm.
  if (p.kernel == "triad") return plan_.watch_share <= 0;
  return plan_.confirm_other_streams;
}

// The time the deadline leaves after the confirmation: more bursts, most of them for the
// categories that the bursts so far have not settled (main memory while other tenants load it),
// so that the fastest samples are drawn over the whole goal, not over the half a fast machine
// needs for its points.
void DeviceRun::watch_to_deadline() {
  if (!plan_.closing_watch || plan_.watch_share <= 0 || plan_.deadline_s <= 0) return;
  // Room is left for the wait for a quiet machine, and a margin for the confirmation taking
  // longer than expected on a busy host.
  const double room =
      0.85 * (time_left_s() - plan_.quiet_wait_s - gemm_last_looks_s() - gemm_last_look_wait_s()) - 2.0;
  if (room < 1.0) return;
  constexpr double kChunkS = 10;  // a progress line this often
  double spent = 0;
  while (spent < room && !stopped()) {
    const double want = std::min(kChunkS, room - spent);
    const double chunk = watch_.extend(want, plan_.closing_watch_min_claim, options_.stop);
    spent += chunk;
    if (chunk < want) break;  // every category settled, or the run was stopped
    say(fmt::format("[{} {:>5.1f}s] more bursts of the headline points: {:.0f} of {:.0f} s", tag_,
                    elapsed_s(), spent, room));
  }
  device_.conditions["closing_watch_s"] = spent;
}

// The time the GEMMs' last looks are expected to take.
double DeviceRun::gemm_last_looks_s() const {
  double s = 0;
  for (const auto& r : gemm_last_looks_) s += look_time_s(r);
  return s;
}

// The wait the GEMMs' last looks may take (Plan::gemm_last_look_wait_s).
double DeviceRun::gemm_last_look_wait_s() const {
  return sentinel_ && !gemm_last_looks_.empty() && plan_.gemm_last_look_within > 0
             ? plan_.gemm_last_look_wait_s
             : 0.0;
}

// One more draw for each product of few rows (Plan::last_look_gemm_rows), while it fits, each
// once the sentinel computes as fast as it ever did (or the wait's budget is spent).
int DeviceRun::gemm_last_looks() {
  int looked = 0;
  const double budget = gemm_last_look_wait_s();
  double waited = 0;
  for (auto& r : gemm_last_looks_) {
    if (stopped()) break;
    // The wait leaves the look its time: it ends while the look still fits, with a margin for
    // one more probe and pause.
    const double before = waited;
    const auto start = Clock::now();
    while (waited < budget && !stopped() && time_left_s() >= look_time_s(r) + 0.5 &&
           !sentinel_->computes_at_best(plan_.gemm_last_look_within, options_.stop)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      waited = before + std::chrono::duration<double>(Clock::now() - start).count();
    }
    looked += last_look(r);
  }
  gemm_last_looks_.clear();
  if (budget > 0) {
    device_.conditions["gemm_last_look_wait_s"] = waited;
    if (waited > 0)
      say(fmt::format("[{}] waited {:.1f} s for the sentinel at its fastest before the GEMMs' last looks",
                      tag_, waited));
  }
  return looked;
}

void DeviceRun::confirm_peaks() {
  if (!plan_.confirm_peaks) return;
  watch_to_deadline();
  wait_for_quiet();
  // The progress total counted every point the plan could confirm; now the candidates are known
  // (a dtype whose points all failed has none).
  const auto from = device_memory_from(backend_.describe().levels);
  int after_watch = 0;
  if (from)
    for (const auto& p : device_.memory_sweep) after_watch += confirms_after_watch(p, *from);
  // The last look's points are chosen after the confirmation; at most the plan's count per dtype.
  std::set<DType> conv_dtypes;
  for (const auto& r : final_candidates_) conv_dtypes.insert(device_.conv[r.index].shape.dtype);
  const int final_rules = (plan_.final_look_within > 0) + (plan_.twin_look_gap > 0);
  const int final_most = plan_.final_looks * final_rules * static_cast<int>(conv_dtypes.size());
  total_points_ = done_points_ + static_cast<int>(watch_.to_confirm()) + after_watch + final_most +
                  static_cast<int>(gemm_last_looks_.size());
  // FMA, the few fastest GEMMs and convolutions of each dtype (which shape is fastest is itself
  // a noisy verdict, and the best layer is a headline figure too) and the main-memory triads.
  watch_.confirm([this](const std::string& category) { return confirm_rule(category); }, options_.stop,
      [this](const std::string& what, double rate) {
        progress("confirm " + what, what == "clock"                   ? format_clock(rate)
                                    : what.rfind("stream", 0) == 0 ? format_Bps(rate)
                                                                   : format_flops_per_s(rate));
      },
      [this](const std::string& category, const std::string& what, const std::string& reason) {
        skip(category, "confirm " + what, reason);
      });
  const auto last = final_look_points();
  total_points_ -= final_most - static_cast<int>(last.size());
  int looked = 0;
  for (Revisit* r : last) {
    if (stopped()) break;
    looked += last_look(*r);
  }
  looked += gemm_last_looks();
  device_.conditions["last_looks"] = looked;
  if (!from) return;
  bool changed = false;
  for (auto& p : device_.memory_sweep) {
    if (!confirms_after_watch(p, *from)) continue;
    const auto op = stream_op_named(p.kernel);
    const auto what = fmt::format("confirm stream {} {}", p.kernel, format_bytes(double(p.bytes)));
    if (auto m = point("stream " + p.kernel, what, plan_.stream_rule, [&] { return backend_.stream(*op, p.bytes); })) {
      if (m->best_Bps() > p.Bps) {
        p.Bps = m->best_Bps();
        p.median_Bps = m->median_Bps();
        changed = true;
      }
      progress(what, format_Bps(p.Bps));
    }
  }
  if (changed) set_memory_levels();
}

// A triad point the plan measures again at the end: its working set past the cache below the
// last level and within the last one (the levels end with device memory), where the share of a
// shared cache that this machine gets shows.
bool DeviceRun::confirms_in_last_cache(std::string_view kernel, std::int64_t bytes) const {
  const auto& levels = backend_.describe().levels;
  if (kernel != "triad" || !plan_.confirm_last_cache_triads || levels.size() < 2 ||
      !levels[levels.size() - 2].bytes)
    return false;
  const std::int64_t below =
      levels.size() >= 3 && levels[levels.size() - 3].bytes ? *levels[levels.size() - 3].bytes : 0;
  return bytes > below && bytes <= *levels[levels.size() - 2].bytes;
}

}  // namespace truepeak::driver_detail
