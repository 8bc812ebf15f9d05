// The calibrate driver: DeviceRun's order of work, time goal and points, and the profile it fills.
#include "calibrate/driver.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "calibrate/backends.hpp"
#include "calibrate/datasheet.hpp"
#include "calibrate/device_run.hpp"
#include "calibrate/machine.hpp"
#include "core/error.hpp"
#include "truepeak/version.hpp"

namespace truepeak {
namespace driver_detail {
namespace {

// Without bursts, the pool is what the end confirms.
PeakWatch::Options watch_options(const Plan& plan) {
  PeakWatch::Options o;
  o.confirmed = plan.confirm_peaks ? std::max(plan.confirm_gemms, 1) : 0;
  o.pool = plan.watch_share > 0 ? std::max(plan.watch_pool, o.confirmed) : o.confirmed;
  o.share = plan.watch_share;
  o.keep_kernels = plan.watch_keeps_kernels;
  o.burst_rule = plan.burst_rule;
  o.spell_s = plan.watch_spell_s;
  o.spell_budget_s = plan.watch_spell_budget_s;
  o.companion_every_s = plan.watch_companion_every_s;
  o.spell_categories = {kMemoryCategory};
  o.admit_within = plan.watch_admit_within;
  o.most = plan.watch_share > 0 ? std::max(plan.watch_most, o.pool) : o.pool;
  return o;
}

}  // namespace

std::string format_elements_per_s(double elements_per_s) {
  return fmt::format("{:.2f} Gelem/s", elements_per_s / 1e9);
}

std::vector<std::pair<StreamOp, std::int64_t>> sweep_points(const Plan& plan) {
  std::vector<std::pair<StreamOp, std::int64_t>> out;
  for (const auto bytes : plan.stream_bytes)
    for (const auto op : plan.stream_ops) out.emplace_back(op, bytes);
  if (std::find(plan.stream_ops.begin(), plan.stream_ops.end(), StreamOp::triad) != plan.stream_ops.end())
    for (const auto bytes : plan.triad_only_bytes) out.emplace_back(StreamOp::triad, bytes);
  return out;
}

DeviceRun::DeviceRun(Backend& backend, const Plan& plan, const CalibrateOptions& options, Device& device,
                     int position, int device_count)
    : backend_(backend), plan_(plan), options_(options), device_(device),
      tag_(device_count > 1 ? fmt::format("{} {}/{}", device.id, position, device_count) : device.id),
      watch_(watch_options(plan)) {
  // Every first measurement by group (the FMA and the two overheads aside).
  const auto expect = [this](const char* group, std::size_t points, const StopRule& rule) {
    pending_[group] = {int(points), 0, 0.0, rule.budget_s / 2};
  };
  expect("vector_op", plan.vector_ops.size(), plan.vector_op_rule);
  expect("gemm", plan.gemm.size() + plan.gemm_cold.size(), plan.gemm_rule);
  // The sweep in two groups, measured apart: main memory (long points), the caches (short ones).
  const auto sweep = sweep_points(plan);
  std::size_t in_memory = 0;
  const auto memory_from = device_memory_from(backend.describe().levels);
  for (const auto& [op, bytes] : sweep) in_memory += memory_from && bytes >= *memory_from;
  expect("memory", in_memory, plan.stream_rule);
  expect("caches", sweep.size() - in_memory + plan.device_copy_bytes.size(), plan.stream_rule);
  expect("conv", plan.conv.size() + plan.conv_cold.size(), plan.conv_rule);
  expect("transfer", plan.transfer_bytes.size() * 4 + (plan.bidirectional_bytes > 0 ? 1 : 0), plan.transfer_rule);
  total_points_ = int(plan.fma_dtypes.size()) + 2 + (plan.measure_clock ? 1 : 0);
  for (const auto& [group, p] : pending_) total_points_ += p.left;
  if (plan.revisit_max_s > 0)
    total_points_ += int(plan.gemm.size() + plan.gemm_cold.size() + plan.conv.size() + plan.conv_cold.size() +
                         plan.vector_ops.size());
  if (plan.confirm_peaks) {
    std::map<DType, int> gemms;
    for (const auto& g : plan.gemm) ++gemms[g.dtype];
    int confirmed = 0;
    for (const auto& [dtype, count] : gemms)
      confirmed += std::min(count, std::max(plan.confirm_gemms, 1));
    std::map<DType, int> convs;
    for (const auto& c : plan.conv) ++convs[c.first.dtype];
    for (const auto& [dtype, count] : convs)
      confirmed += std::min(count, std::max(plan.confirm_gemms, 1));
    // The main-memory triads are confirmed by the watch or after it; the other ops when the
    // plan says so.
    if (memory_from) {
      for (const auto& [op, bytes] : sweep) {
        confirmed += bytes >= *memory_from && (op == StreamOp::triad || plan.confirm_other_streams);
        confirmed += confirms_in_last_cache(to_string(op), bytes);
      }
    }
    total_points_ += int(plan.fma_dtypes.size()) + (plan.measure_clock ? 1 : 0) + confirmed;
  }
}

void DeviceRun::run() {
  start_ = Clock::now();
  start_sentinel();
  measure_fma();
  measure_clock();
  measure_overhead();
  measure_vector_ops();
  // Main memory early: its triads, the headline that other tenants move the most, then stay
  // peak-watch candidates for nearly all the run. The in-cache points, a few microseconds each,
  // after the GEMMs: early in a run, while the threads are cold, they can run at half their
  // usual rate.
  measure_memory(true);
  measure_gemm();
  measure_memory(false);
  measure_conv();
  measure_transfers();
  group_.clear();  // second looks and confirmations from here on
  revisit();
  confirm_peaks();
  finish();
}

// The rule a peak-watch category is confirmed with.
StopRule DeviceRun::confirm_rule(const std::string& category) const {
  if (category == kMemoryCategory) return plan_.stream_rule;
  if (category.rfind("fma", 0) == 0 || category == kClockCategory) return plan_.fma_rule;
  return category.rfind("conv", 0) == 0 ? plan_.conv_rule : plan_.gemm_rule;
}

// Seconds the optional work may still take and leave the first measurements still to come and
// the confirmation time to end by the plan's deadline (Plan::deadline_s; without one, no limit).
// On a busy host re-measures early in a run would otherwise take the time of the points after
// them: re-measures all through the GEMMs can push the convolutions well past the goal
// (docs/methodology.md, "The time goal").
double DeviceRun::time_left_s() const {
  if (plan_.deadline_s <= 0) return std::numeric_limits<double>::infinity();
  return plan_.deadline_s - elapsed_s() - time_to_come_s() - confirmation_s();
}

// About how long the confirmation at the end takes.
double DeviceRun::confirmation_s() const {
  if (!plan_.confirm_peaks) return 0;
  double s = watch_.confirm_time_s([this](const std::string& category) { return confirm_rule(category); });
  if (const auto from = device_memory_from(backend_.describe().levels))
    for (const auto& p : device_.memory_sweep)
      if (confirms_after_watch(p, *from)) s += expected_time_s(plan_.stream_rule, p.bytes / p.median_Bps);
  return s;
}

// About how long the first measurements still to come take, with the peak watch's bursts
// between them (Plan::watch_share of the time).
double DeviceRun::time_to_come_s() const {
  double s = 0;
  for (const auto& [group, p] : pending_) s += p.expected_s();
  return s / (1 - std::clamp(plan_.watch_share, 0.0, 0.5));
}

// `rule` for a first measurement, its time budget cut (to a quarter at most) where the points
// still to come would otherwise end past the deadline: on a busy host every point runs to its
// budget, and the GEMMs alone can take half as long again as on a quiet one. The minimum count
// of samples stays.
StopRule DeviceRun::within_goal(StopRule rule) {
  if (plan_.deadline_s <= 0) return rule;
  const double room = plan_.deadline_s - elapsed_s() - confirmation_s();  // for this point and the rest
  const double need = time_to_come_s() + rule.budget_s / 2;
  if (need > 0 && room < need) {
    const double cut = std::clamp(room / need, 0.25, 1.0);
    rule.budget_s *= cut;
    rule.warmup_s *= cut;
    ++budgets_cut_;
  }
  return rule;
}

void DeviceRun::progress(const std::string& what, const std::string& figure) {
  ++done_points_;
  say(fmt::format("[{} {:>3}/{} {:>5.1f}s] {:<44} {}", tag_, done_points_, total_points_, elapsed_s(), what,
                  figure));
}

void DeviceRun::skip(const std::string& klass, const std::string& what, const std::string& given) {
  // Problems of one class that fail for the same reason are one entry with a count. A reason
  // that begins with the problem's name (a kernel's message: "gemm bf16_b1m64n64k64: ...") drops
  // it: the entry names the problem, and the rest is what the problems of a class share.
  const auto colon = given.find(": ");
  const bool named = colon != std::string::npos && what.rfind(given.substr(0, colon), 0) == 0;
  const std::string reason = named ? given.substr(colon + 2) : given;
  const auto key = klass + "\n" + reason;
  auto it = skipped_index_.find(key);
  if (it == skipped_index_.end()) {
    skipped_index_[key] = {device_.skipped.size(), 1};
    device_.skipped.push_back({what, reason});
    say(fmt::format("[{}] skipped {}: {}", tag_, what, reason));
  } else {
    auto& [index, count] = it->second;
    ++count;
    device_.skipped[index].what = fmt::format("{} ({} problems)", klass, count);
  }
  ++done_points_;
}

void DeviceRun::start_sentinel() {
  try {
    std::vector<std::unique_ptr<Kernel>> probes;
    probes.push_back(backend_.sentinel());
    if (plan_.memory_sentinel_bytes > 0)
      probes.push_back(backend_.stream(StreamOp::triad, plan_.memory_sentinel_bytes));
    for (auto& probe : probes) probe->check();
    sentinel_ = std::make_unique<Sentinel>(std::move(probes), plan_.sentinel_rule, plan_.sentinel_slowdown);
    sentinel_->calibrate_baseline(options_.stop);
  } catch (const Error& e) {
    sentinel_.reset();
    device_.skipped.push_back({"sentinel", fmt::format("interference detection off: {}", e.what())});
  } catch (const std::bad_alloc&) {
    sentinel_.reset();
    device_.skipped.push_back({"sentinel", "interference detection off: out of memory"});
  }
}

// Working sets from 4x the last cache's capacity measure device memory (as level_bandwidths).
std::optional<std::int64_t> DeviceRun::device_memory_from(const std::vector<MemoryLevel>& levels) {
  if (levels.size() < 2 || !levels[levels.size() - 2].bytes) return std::nullopt;
  return 4 * *levels[levels.size() - 2].bytes;
}

std::optional<StreamOp> DeviceRun::stream_op_named(const std::string& name) {
  for (const auto op : {StreamOp::copy, StreamOp::scale, StreamOp::add, StreamOp::triad, StreamOp::update}) {
    if (to_string(op) == name) return op;
  }
  return std::nullopt;
}

void DeviceRun::finish() {
  // Main memory was measured first; the profile lists the sweep by working set (the watch,
  // which wrote to its points by index, is closed).
  std::stable_sort(device_.memory_sweep.begin(), device_.memory_sweep.end(),
                   [](const MemoryPoint& a, const MemoryPoint& b) { return a.bytes < b.bytes; });
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  device_.conditions["elapsed_s"] = elapsed;
  device_.conditions["suite"] = options_.suite == Suite::quick ? "quick" : "full";
  device_.conditions["interrupted"] = stopped();
  if (plan_.deadline_s > 0) {
    device_.conditions["deadline_s"] = plan_.deadline_s;
    device_.conditions["left_out_for_deadline"] = {{"remeasures", left_out_.remeasures},
                                                   {"second_looks", left_out_.second_looks},
                                                   {"last_looks", left_out_.last_looks},
                                                   {"quiet_wait_s", left_out_.quiet_wait_s},
                                                   {"budgets_cut", budgets_cut_}};
  }
  if (sentinel_) device_.conditions["sentinel"] = sentinel_->report(remeasured_);
  if (plan_.watch_share > 0) device_.conditions["peak_watch"] = watch_.report();
}

}  // namespace driver_detail

bool calibrate_device(Backend& backend, const Plan& plan, const CalibrateOptions& options, Device& device,
                      int position, int device_count) {
  driver_detail::DeviceRun run(backend, plan, options, device, position, device_count);
  run.run();
  return !run.interrupted();
}

Profile run_calibration(const CalibrateOptions& options) {
  Profile profile;
  profile.tool.version = TRUEPEAK_VERSION;
  profile.tool.git_sha = TRUEPEAK_GIT_SHA;
  profile.tool.argv = options.argv;
  profile.created_utc = utc_now_iso8601();
  profile.machine = read_machine(options.label);
  profile.machine.price_per_hour_usd = options.price_per_hour_usd;

  bool interrupted = false;
  int position = 0;
  for (const auto& id : options.device_ids) {
    ++position;
    if (options.stop && options.stop->load()) {
      interrupted = true;
      break;
    }
    auto backend = make_backend(id, options.threads);
    const auto& desc = backend->describe();
    Device device;
    device.id = desc.id;
    device.kind = desc.kind;
    device.name = desc.name;
    device.libraries = desc.libraries;
    device.properties = desc.properties;
    device.memory_bytes = desc.memory_bytes;
    const auto datasheet_of = [](const DeviceDescription& d) {
      return d.kind == "gpu" ? gpu_datasheet(d) : cpu_datasheet(d);
    };
    device.datasheet = datasheet_of(desc);
    const Plan plan = desc.kind == "gpu" ? gpu_plan(desc, options.suite) : cpu_plan(desc, options.suite);
    if (options.progress) options.progress(fmt::format("[{}] calibrating {} ({})", desc.id, desc.name, desc.kind));
    interrupted = !calibrate_device(*backend, plan, options, device, position, int(options.device_ids.size())) ||
                  interrupted;
    // Properties the run measured (the fastest clock it saw) enter the derived peaks.
    if (device.properties != desc.properties) {
      DeviceDescription seen = desc;
      seen.properties = device.properties;
      device.datasheet = datasheet_of(seen);
    }
    profile.devices.push_back(std::move(device));
  }
  profile.complete = !interrupted;
  return profile;
}

}  // namespace truepeak
