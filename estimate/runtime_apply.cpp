#include "estimate/runtime_apply.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "estimate/rates.hpp"

namespace truepeak::estimate {
namespace {

// The kinds' costs that `cost` gives (nullopt: not measured), for `dtype`: a kind's cost for this
// dtype wins over its cost for every dtype.
template <typename Cost>
OwnRates kind_costs(const RuntimeRecord& record, DType dtype, Cost cost) {
  OwnRates every, of_dtype;
  for (const auto& c : record.kind_op_s) {
    const std::optional<double> value = cost(c);
    if (!value) continue;
    if (!c.dtype)
      every.emplace_back(c.kind, *value);
    else if (c.dtype == dtype)
      of_dtype.emplace_back(c.kind, *value);
  }
  override_rates(every, of_dtype);
  return every;
}

}  // namespace

const RuntimeRecord& find_runtime(const Device& device, const std::string& key,
                                  const std::string& profile_file) {
  if (const auto it = device.runtimes.find(key); it != device.runtimes.end()) return it->second;
  std::vector<std::string> keys;
  for (const auto& [k, record] : device.runtimes) keys.push_back(k);
  const std::string has =
      keys.empty() ? "it has none" : fmt::format("it has: {}", fmt::join(keys, ", "));
  throw InputError(fmt::format(
      "--runtime {}: not in {} ({}); add it with 'truepeak calibrate --runtime {} --add-to {}'",
      key, profile_file, has, key, profile_file));
}

Device runtime_device(const Device& device, const RuntimeRecord& record) {
  Device out = device;
  for (auto& level : out.memory_levels) {
    const auto it = std::find_if(record.memory_levels.begin(), record.memory_levels.end(),
                                 [&](const LevelBandwidth& l) { return l.name == level.name; });
    if (it != record.memory_levels.end()) level.Bps = it->Bps;
  }
  std::set<DType> gemm_dtypes;
  for (const auto& p : record.gemm) gemm_dtypes.insert(p.shape.dtype);
  // A runtime's convolution points replace the library's of their dtype, class (dense, grouped,
  // depthwise, which the rate model fits apart) and weights (warm or cold). A runtime that times
  // only some keeps the library's for the others: torch-jit times its dense convolutions with
  // warm weights where it bundles another oneDNN, since a frozen pair of small grouped or
  // depthwise ones is mostly its graph's call and layout changes, and weights read from memory
  // come at the memory's rate whichever library reads them.
  std::set<std::tuple<DType, int, bool>> conv_sets;
  const auto conv_set = [](const ConvPoint& p) {
    return std::tuple{p.shape.dtype, conv_point_class(p.shape), p.cold_weights};
  };
  for (const auto& p : record.conv) conv_sets.insert(conv_set(p));
  std::erase_if(out.gemm, [&](const GemmPoint& p) { return gemm_dtypes.contains(p.shape.dtype); });
  std::erase_if(out.conv, [&](const ConvPoint& p) { return conv_sets.contains(conv_set(p)); });
  out.gemm.insert(out.gemm.end(), record.gemm.begin(), record.gemm.end());
  out.conv.insert(out.conv.end(), record.conv.begin(), record.conv.end());
  // The peak is the best GEMM measured; for the runtime that is the best of its own kernels,
  // never the library's it does not call.
  for (const auto dtype : gemm_dtypes) {
    double best = 0;
    for (const auto& p : record.gemm)
      if (p.shape.dtype == dtype) best = std::max(best, p.flops_per_s);
    out.peaks.flops_per_s[std::string(to_string(dtype))] = best;
  }
  return out;
}

std::vector<std::string> apply_runtime(const RuntimeRecord& record, const std::string& key,
                                       Options& options) {
  std::vector<std::string> notes;
  const DType dtype = options.dtype;
  if (std::find(record.dtypes.begin(), record.dtypes.end(), dtype) == record.dtypes.end()) {
    std::vector<std::string> names;
    for (const auto d : record.dtypes) names.emplace_back(to_string(d));
    notes.push_back(fmt::format(
        "--runtime {}: calibrated for {}, not {}: only its figures for every dtype apply", key,
        fmt::join(names, ", "), to_string(dtype)));
  }
  options.op_overhead_s = record.op_s;

  options.kind_overheads =
      kind_costs(record, dtype, [](const RuntimeKindCost& c) -> std::optional<double> { return c.op_s; });
  // The cold costs where measured.
  ColdCalls cold{record.cold_op_s,
                 kind_costs(record, dtype, [](const RuntimeKindCost& c) { return c.cold_op_s; })};
  if (cold.op_s || !cold.kinds.empty())
    options.cold_calls = std::move(cold);
  else
    options.cold_calls.reset();

  options.own_rates.clear();
  for (const auto& k : record.own_kernels)
    if (k.dtype == dtype) options.own_rates.emplace_back(k.kind, k.elements_per_s);

  if (record.layout) {
    BlockedLayout layout;
    layout.ops = record.layout->blocked_ops;
    layout.to_plain_copies = record.layout->to_plain_copies;
    layout.to_blocked_copies = record.layout->to_blocked_copies;
    layout.expand_broadcast = record.layout->expand_broadcast;
    layout.broadcast_plain = record.layout->broadcast_plain;
    layout.group_reorder_widths = record.layout->group_reorder_widths;
    layout.conv_channel_multiple = record.layout->conv_channel_multiple;
    layout.conv_small_input_channels = record.layout->conv_small_input_channels;
    options.blocked_layout = std::move(layout);
  } else {
    options.blocked_layout.reset();
  }
  options.conv_layout = record.conv_layout;
  options.linears_as_convolutions = record.linears_as_convolutions;
  options.in_place_ops = record.in_place;
  if (record.fusion) {
    const auto& f = *record.fusion;
    options.fusion = FusionRules{f.pointwise, f.into_reductions, f.into_products, f.graph_s};
  } else {
    options.fusion.reset();
  }
  options.conv_dispatch = record.conv_dispatch;
  return notes;
}

ImportRules import_rules(const RuntimeRecord& record) {
  return {.fuse_activations = record.fuse_activations,
          .fused_activations = record.fused_activations,
          .fold_batchnorm = !record.conv_batchnorm_apart};
}

void override_rates(OwnRates& base, const OwnRates& given) {
  for (const auto& [kind, value] : given) {
    const auto it =
        std::find_if(base.begin(), base.end(), [&](const auto& r) { return r.first == kind; });
    if (it != base.end()) {
      it->second = value;
    } else {
      base.emplace_back(kind, value);
    }
  }
}

}  // namespace truepeak::estimate
