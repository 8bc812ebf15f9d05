// The profile's JSON writer: a Profile, its devices' points and its runtime records as the
// schema's documents.
#include "core/profile.hpp"

#include <cstdint>

namespace truepeak {
namespace {

using nlohmann::json;

json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json optional_integer(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

json to_json(const Timing& t, double flops_per_s, json point) {
  point["time_s"] = t.time_s;
  point["median_s"] = t.median_s;
  if (t.typical_s > 0) point["typical_s"] = t.typical_s;
  point["flops_per_s"] = flops_per_s;
  point["cv"] = t.cv;
  point["samples"] = t.samples;
  return point;
}

json to_json(const TransferFit& fit) {
  json points = json::array();
  for (const auto& p : fit.points) points.push_back({{"bytes", p.bytes}, {"time_s", p.time_s}});
  return {{"latency_s", optional_number(fit.latency_s)}, {"Bps", optional_number(fit.Bps)}, {"points", points}};
}

json gemm_json(const std::vector<GemmPoint>& points) {
  json gemm = json::array();
  for (const auto& p : points) {
    gemm.push_back(to_json(p.timing, p.flops_per_s,
                           {{"dtype", to_string(p.shape.dtype)},
                            {"m", p.shape.m},
                            {"n", p.shape.n},
                            {"k", p.shape.k},
                            {"batch", p.shape.batch},
                            {"impl", p.impl},
                            {"layout", p.layout},
                            {"cold_weights", p.cold_weights}}));
  }
  return gemm;
}

json conv_json(const std::vector<ConvPoint>& points) {
  json conv = json::array();
  for (const auto& p : points) {
    const auto& s = p.shape;
    conv.push_back(to_json(p.timing, p.flops_per_s,
                           {{"dtype", to_string(s.dtype)}, {"n", s.n}, {"c", s.c}, {"h", s.h}, {"w", s.w},
                            {"k", s.k}, {"r", s.r}, {"s", s.s}, {"stride", s.stride}, {"pad", s.pad},
                            {"dilation", s.dilation}, {"groups", s.groups}, {"layout", p.layout},
                            {"impl", p.impl}, {"cold_weights", p.cold_weights}}));
  }
  return conv;
}

json levels_json(const std::vector<LevelBandwidth>& in) {
  json out = json::array();
  for (const auto& l : in) out.push_back({{"name", l.name}, {"bytes", optional_integer(l.bytes)}, {"Bps", l.Bps}});
  return out;
}

json to_json(const Device& d) {
  const json gemm = gemm_json(d.gemm);
  const json conv = conv_json(d.conv);
  json vector_ops = json::array();
  for (const auto& p : d.vector_ops) {
    vector_ops.push_back({{"op", p.op}, {"dtype", to_string(p.dtype)}, {"rows", p.rows},
                          {"cols", p.cols}, {"time_s", p.timing.time_s},
                          {"median_s", p.timing.median_s}, {"elements_per_s", p.elements_per_s},
                          {"cv", p.timing.cv}, {"samples", p.timing.samples}, {"impl", p.impl}});
    if (p.timing.typical_s > 0) vector_ops.back()["typical_s"] = p.timing.typical_s;
  }
  json sweep = json::array();
  for (const auto& p : d.memory_sweep) {
    sweep.push_back({{"kernel", p.kernel}, {"bytes", p.bytes}, {"Bps", p.Bps}, {"median_Bps", p.median_Bps}});
  }
  json memory = {{"sweep", sweep}, {"levels", levels_json(d.memory_levels)}};
  if (!d.memory_in_place_levels.empty()) memory["in_place_levels"] = levels_json(d.memory_in_place_levels);
  json transfers = json::object();
  for (const auto& [name, fit] : d.transfers) transfers[name] = to_json(fit);
  transfers["bidirectional_Bps"] = optional_number(d.bidirectional_Bps);
  json skipped = json::array();
  for (const auto& s : d.skipped) skipped.push_back({{"what", s.what}, {"reason", s.reason}});

  json out = {
      {"id", d.id},
      {"kind", d.kind},
      {"name", d.name},
      {"libraries", d.libraries},
      {"properties", d.properties},
      {"memory_bytes", optional_integer(d.memory_bytes)},
      {"datasheet",
       {{"flops_per_s", d.datasheet.flops_per_s},
        {"vector_flops_per_s", d.datasheet.vector_flops_per_s},
        {"memory_Bps", optional_number(d.datasheet.memory_Bps)},
        {"source", d.datasheet.source}}},
      {"peaks",
       {{"flops_per_s", d.peaks.flops_per_s},
        {"vector_flops_per_s", d.peaks.vector_flops_per_s},
        {"memory_Bps", optional_number(d.peaks.memory_Bps)}}},
      {"gemm", gemm},
      {"conv", conv},
      {"vector_ops", vector_ops},
      {"memory", memory},
      {"overhead", {{"op_s", optional_number(d.overhead_op_s)}, {"graph_op_s", optional_number(d.overhead_graph_op_s)}}},
      {"transfers", transfers},
      {"conditions", d.conditions},
      {"skipped", skipped},
  };
  // Absent where no runtime was calibrated, as in profiles before 1.12.
  if (!d.runtimes.empty()) {
    json runtimes = json::object();
    for (const auto& [key, record] : d.runtimes) runtimes[key] = to_json(record);
    out["runtimes"] = std::move(runtimes);
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const RuntimeRecord& rec) {
  json kind_op_s = json::array();
  for (const auto& c : rec.kind_op_s) {
    kind_op_s.push_back({{"kind", c.kind},
                         {"dtype", c.dtype ? json(std::string(to_string(*c.dtype))) : json(nullptr)},
                         {"op_s", c.op_s}});
    if (c.cold_op_s) kind_op_s.back()["cold_op_s"] = *c.cold_op_s;
  }
  json own_kernels = json::array();
  for (const auto& k : rec.own_kernels) {
    own_kernels.push_back(
        {{"kind", k.kind}, {"dtype", std::string(to_string(k.dtype))}, {"elements_per_s", k.elements_per_s}});
  }
  json layout = nullptr;
  if (rec.layout) {
    const auto& l = *rec.layout;
    layout = {{"blocked_ops", l.blocked_ops},
              {"to_plain_copies", l.to_plain_copies},
              {"to_blocked_copies", l.to_blocked_copies},
              {"expand_broadcast", l.expand_broadcast},
              {"group_reorder_widths", l.group_reorder_widths}};
    if (l.broadcast_plain) layout["broadcast_plain"] = true;
    if (l.conv_channel_multiple > 1) {
      layout["conv_channel_multiple"] = l.conv_channel_multiple;
      layout["conv_small_input_channels"] = l.conv_small_input_channels;
    }
  }
  json dtypes = json::array();
  for (const auto d : rec.dtypes) dtypes.push_back(std::string(to_string(d)));
  json fusion = nullptr;
  if (rec.fusion) {
    fusion = {{"pointwise", rec.fusion->pointwise},
              {"into_reductions", rec.fusion->into_reductions},
              {"into_products", rec.fusion->into_products},
              {"graph_s", rec.fusion->graph_s}};
  }
  json conv_dispatch = nullptr;
  if (rec.conv_dispatch) {
    const auto& d = *rec.conv_dispatch;
    conv_dispatch = {{"impl", d.impl},
                     {"max_input_elements", d.max_input_elements ? json(*d.max_input_elements) : json(nullptr)},
                     {"max_batch", d.max_batch},
                     {"max_window", d.max_window},
                     {"window_side", d.window_smaller_side ? "smaller" : "larger"},
                     {"strided", d.strided},
                     {"grouped", d.grouped},
                     {"depthwise", d.depthwise}};
    if (d.op_s) conv_dispatch["op_s"] = *d.op_s;
    if (d.others_op_s) conv_dispatch["others_op_s"] = *d.others_op_s;
  }
  json out = rec.extra.is_object() ? rec.extra : json::object();
  out.update({{"runtime", rec.runtime},
              {"device", rec.device},
              {"framework", rec.framework},
              {"versions", rec.versions},
              {"python", rec.python},
              {"threads", rec.threads},
              {"dtypes", dtypes},
              {"settings", rec.settings},
              {"op_s", rec.op_s},
              {"kind_op_s", kind_op_s},
              {"own_kernels", own_kernels},
              {"layout", layout},
              {"conv_layout", rec.conv_layout},
              {"linears_as_convolutions", rec.linears_as_convolutions},
              {"in_place", rec.in_place},
              {"fuse_activations", rec.fuse_activations},
              {"conv_batchnorm_apart", rec.conv_batchnorm_apart},
              {"fusion", fusion},
              {"conv_dispatch", conv_dispatch},
              {"memory", {{"levels", levels_json(rec.memory_levels)}}},
              {"gemm", gemm_json(rec.gemm)},
              {"conv", conv_json(rec.conv)},
              {"probes", rec.probes},
              {"calibration_s", optional_number(rec.calibration_s)}});
  if (!rec.fused_activations.empty()) out["fused_activations"] = rec.fused_activations;
  if (rec.cold_op_s) out["cold_op_s"] = *rec.cold_op_s;
  return out;
}

nlohmann::json to_json(const Profile& profile) {
  json devices = json::array();
  for (const auto& d : profile.devices) devices.push_back(to_json(d));
  const auto& m = profile.machine;
  return {
      {"schema_version", profile.schema_version},
      {"tool",
       {{"name", profile.tool.name}, {"version", profile.tool.version}, {"git_sha", profile.tool.git_sha},
        {"argv", profile.tool.argv}}},
      {"created_utc", profile.created_utc},
      {"complete", profile.complete},
      {"machine",
       {{"label", m.label}, {"hostname", m.hostname}, {"os", m.os}, {"cpu_model", m.cpu_model},
        {"cpu_cores", m.cpu_cores}, {"memory_bytes", optional_integer(m.memory_bytes)},
        {"price_per_hour_usd", optional_number(m.price_per_hour_usd)}}},
      {"devices", devices},
  };
}

}  // namespace truepeak
