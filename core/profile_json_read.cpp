// The profile's JSON reader: a document checked field by field into a Profile or RuntimeRecord,
// its schema version and the bounds of its measured rates checked first.
#include "core/profile.hpp"

#include <cmath>
#include <cstdint>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/profile_json_reader.hpp"

namespace truepeak {
namespace {

using nlohmann::json;
using profile_detail::Reader;

std::vector<GemmPoint> gemm_from_json(const Reader& r, const json& obj, const std::string& path) {
  std::vector<GemmPoint> out;
  const auto* gemm = r.optional_field(obj, path, "gemm");
  if (!gemm) return out;
  if (!gemm->is_array()) r.fail(path + "/gemm", "expected an array");
  for (std::size_t i = 0; i < gemm->size(); ++i) {
    const auto& g = (*gemm)[i];
    const auto p = fmt::format("{}/gemm/{}", path, i);
    GemmPoint pt;
    pt.shape.dtype = r.dtype(g, p);
    pt.shape.m = r.integer_at_least(g, p, "m", 1);
    pt.shape.n = r.integer_at_least(g, p, "n", 1);
    pt.shape.k = r.integer_at_least(g, p, "k", 1);
    pt.shape.batch = r.integer_at_least(g, p, "batch", 1);
    pt.timing = r.timing(g, p);
    pt.flops_per_s = r.number(g, p, "flops_per_s");
    pt.impl = r.optional_string(g, p, "impl");
    pt.layout = r.optional_string(g, p, "layout");
    pt.cold_weights = r.optional_boolean(g, p, "cold_weights");
    out.push_back(std::move(pt));
  }
  return out;
}

std::vector<ConvPoint> conv_from_json(const Reader& r, const json& obj, const std::string& path) {
  std::vector<ConvPoint> out;
  const auto* conv = r.optional_field(obj, path, "conv");
  if (!conv) return out;
  if (!conv->is_array()) r.fail(path + "/conv", "expected an array");
  for (std::size_t i = 0; i < conv->size(); ++i) {
    const auto& c = (*conv)[i];
    const auto p = fmt::format("{}/conv/{}", path, i);
    ConvPoint pt;
    auto& s = pt.shape;
    s.dtype = r.dtype(c, p);
    s.n = r.integer_at_least(c, p, "n", 1);
    s.c = r.integer_at_least(c, p, "c", 1);
    s.h = r.integer_at_least(c, p, "h", 1);
    s.w = r.integer_at_least(c, p, "w", 1);
    s.k = r.integer_at_least(c, p, "k", 1);
    s.r = r.integer_at_least(c, p, "r", 1);
    s.s = r.integer_at_least(c, p, "s", 1);
    s.stride = r.integer_at_least(c, p, "stride", 1);
    s.pad = r.integer_at_least(c, p, "pad", 0);
    s.dilation = r.integer_at_least(c, p, "dilation", 1);
    s.groups = r.integer_at_least(c, p, "groups", 1);
    pt.layout = r.optional_string(c, p, "layout");
    pt.timing = r.timing(c, p);
    pt.flops_per_s = r.number(c, p, "flops_per_s");
    pt.impl = r.optional_string(c, p, "impl");
    pt.cold_weights = r.optional_boolean(c, p, "cold_weights");
    out.push_back(std::move(pt));
  }
  return out;
}

std::vector<LevelBandwidth> levels_from_json(const Reader& r, const json& obj, const std::string& path,
                                             const char* key) {
  std::vector<LevelBandwidth> out;
  const auto* levels = r.optional_field(obj, path, key);
  if (!levels) return out;
  const auto kp = fmt::format("{}/{}", path, key);
  if (!levels->is_array()) r.fail(kp, "expected an array");
  for (std::size_t i = 0; i < levels->size(); ++i) {
    const auto& l = (*levels)[i];
    const auto lp = fmt::format("{}/{}", kp, i);
    out.push_back({r.string(l, lp, "name"), r.optional_integer(l, lp, "bytes"), r.number(l, lp, "Bps")});
  }
  return out;
}

// The fields of a runtime record this version knows; any other is kept in RuntimeRecord::extra.
const std::set<std::string>& record_fields() {
  static const std::set<std::string> names = {
      "runtime", "device",      "framework", "versions",        "python",      "threads",
      "dtypes",  "settings",    "op_s",      "kind_op_s",       "own_kernels", "layout",
      "conv_layout", "linears_as_convolutions", "in_place", "fuse_activations", "fused_activations", "conv_batchnorm_apart", "cold_op_s", "fusion", "conv_dispatch", "memory",
      "gemm",    "conv",        "probes",    "calibration_s"};
  return names;
}

std::vector<std::string> string_list(const Reader& r, const json& obj, const std::string& path, const char* key) {
  std::vector<std::string> out;
  const auto* v = r.optional_field(obj, path, key);
  if (!v) return out;
  if (!v->is_array()) r.fail(path + "/" + key, "expected an array of strings");
  for (const auto& item : *v) {
    if (!item.is_string()) r.fail(path + "/" + key, "expected an array of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

RuntimeRecord record_from_json(const Reader& r, const json& obj, const std::string& path) {
  if (!obj.is_object()) r.fail(path, "expected an object (a runtime record)");
  RuntimeRecord rec;
  rec.runtime = r.string(obj, path, "runtime");
  rec.device = r.string(obj, path, "device");
  rec.framework = r.string(obj, path, "framework");
  if (const auto* v = r.optional_field(obj, path, "versions")) rec.versions = *v;
  rec.python = r.optional_string(obj, path, "python");
  rec.threads = static_cast<int>(r.integer(obj, path, "threads"));
  const auto& dtypes = r.array(obj, path, "dtypes");
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    const auto name = dtypes[i].is_string() ? dtypes[i].get<std::string>() : std::string();
    const auto d = parse_dtype(name);
    if (!d) r.fail(fmt::format("{}/dtypes/{}", path, i), fmt::format("unknown data type {}", dtypes[i].dump()));
    rec.dtypes.push_back(*d);
  }
  if (const auto* v = r.optional_field(obj, path, "settings")) rec.settings = *v;
  rec.op_s = r.number(obj, path, "op_s");
  if (r.optional_field(obj, path, "cold_op_s")) rec.cold_op_s = r.number(obj, path, "cold_op_s");
  if (const auto* costs = r.optional_field(obj, path, "kind_op_s")) {
    if (!costs->is_array()) r.fail(path + "/kind_op_s", "expected an array");
    for (std::size_t i = 0; i < costs->size(); ++i) {
      const auto& c = (*costs)[i];
      const auto p = fmt::format("{}/kind_op_s/{}", path, i);
      RuntimeKindCost cost;
      cost.kind = r.string(c, p, "kind");
      if (r.optional_field(c, p, "dtype")) cost.dtype = r.dtype(c, p);
      cost.op_s = r.number(c, p, "op_s");
      if (r.optional_field(c, p, "cold_op_s")) cost.cold_op_s = r.number(c, p, "cold_op_s");
      rec.kind_op_s.push_back(std::move(cost));
    }
  }
  if (const auto* kernels = r.optional_field(obj, path, "own_kernels")) {
    if (!kernels->is_array()) r.fail(path + "/own_kernels", "expected an array");
    for (std::size_t i = 0; i < kernels->size(); ++i) {
      const auto& k = (*kernels)[i];
      const auto p = fmt::format("{}/own_kernels/{}", path, i);
      rec.own_kernels.push_back({r.string(k, p, "kind"), r.dtype(k, p), r.number(k, p, "elements_per_s")});
    }
  }
  if (const auto* layout = r.optional_field(obj, path, "layout")) {
    const auto p = path + "/layout";
    if (!layout->is_object()) r.fail(p, "expected an object or null");
    RuntimeLayout l;
    l.blocked_ops = string_list(r, *layout, p, "blocked_ops");
    l.to_plain_copies = static_cast<int>(r.optional_integer(*layout, p, "to_plain_copies").value_or(1));
    l.to_blocked_copies = static_cast<int>(r.optional_integer(*layout, p, "to_blocked_copies").value_or(1));
    l.expand_broadcast = r.optional_boolean(*layout, p, "expand_broadcast");
    l.broadcast_plain = r.optional_boolean(*layout, p, "broadcast_plain");
    if (const auto* widths = r.optional_field(*layout, p, "group_reorder_widths")) {
      if (!widths->is_array()) r.fail(p + "/group_reorder_widths", "expected an array of integers");
      for (const auto& w : *widths) {
        if (!w.is_number_integer()) r.fail(p + "/group_reorder_widths", "expected an array of integers");
        l.group_reorder_widths.push_back(w.get<std::int64_t>());
      }
    }
    l.conv_channel_multiple = r.optional_integer(*layout, p, "conv_channel_multiple").value_or(1);
    if (l.conv_channel_multiple < 1) r.fail(p + "/conv_channel_multiple", "expected an integer of at least 1");
    l.conv_small_input_channels = r.optional_integer(*layout, p, "conv_small_input_channels").value_or(0);
    if (l.conv_small_input_channels < 0)
      r.fail(p + "/conv_small_input_channels", "expected an integer of at least 0");
    rec.layout = std::move(l);
  }
  rec.conv_layout = r.optional_string(obj, path, "conv_layout");
  rec.linears_as_convolutions = r.optional_boolean(obj, path, "linears_as_convolutions");
  rec.in_place = string_list(r, obj, path, "in_place");
  rec.fuse_activations = r.optional_boolean(obj, path, "fuse_activations");
  rec.fused_activations = string_list(r, obj, path, "fused_activations");
  rec.conv_batchnorm_apart = r.optional_boolean(obj, path, "conv_batchnorm_apart");
  if (const auto* fusion = r.optional_field(obj, path, "fusion")) {
    const auto p = path + "/fusion";
    if (!fusion->is_object()) r.fail(p, fmt::format("expected an object or null, got {}", fusion->type_name()));
    RuntimeFusion f;
    f.pointwise = r.boolean(*fusion, p, "pointwise");
    f.into_reductions = r.boolean(*fusion, p, "into_reductions");
    f.into_products = r.boolean(*fusion, p, "into_products");
    f.graph_s = r.number(*fusion, p, "graph_s");
    // Charged once a pass: a second would be longer than any model's whole pass.
    if (!(std::isfinite(f.graph_s) && f.graph_s >= 0 && f.graph_s < 1))
      r.fail(p + "/graph_s", fmt::format("a time must be at least 0 s and under 1 s, got {:g}", f.graph_s));
    rec.fusion = f;
  }
  if (const auto* dispatch = r.optional_field(obj, path, "conv_dispatch")) {
    const auto p = path + "/conv_dispatch";
    if (!dispatch->is_object())
      r.fail(p, fmt::format("expected an object or null, got {}", dispatch->type_name()));
    RuntimeConvDispatch d;
    d.impl = r.string(*dispatch, p, "impl");
    if (d.impl.empty()) r.fail(p + "/impl", "an implementation name must not be empty");
    r.field(*dispatch, p, "max_input_elements");  // present, null where there is no bound
    d.max_input_elements = r.optional_integer(*dispatch, p, "max_input_elements");
    if (d.max_input_elements && *d.max_input_elements < 1)
      r.fail(p + "/max_input_elements", fmt::format("expected at least 1, got {}", *d.max_input_elements));
    d.max_batch = r.integer_at_least(*dispatch, p, "max_batch", 1);
    d.max_window = r.integer_at_least(*dispatch, p, "max_window", 1);
    const auto side = r.string(*dispatch, p, "window_side");
    if (side != "larger" && side != "smaller")
      r.fail(p + "/window_side", fmt::format("expected \"larger\" or \"smaller\", got \"{}\"", side));
    d.window_smaller_side = side == "smaller";
    d.strided = r.boolean(*dispatch, p, "strided");
    d.grouped = r.boolean(*dispatch, p, "grouped");
    d.depthwise = r.boolean(*dispatch, p, "depthwise");
    for (auto [key, cost] : {std::pair{"op_s", &d.op_s}, std::pair{"others_op_s", &d.others_op_s}}) {
      *cost = r.optional_number(*dispatch, p, key);
      if (*cost && !(std::isfinite(**cost) && **cost >= 0 && **cost < 1))
        r.fail(p + "/" + key, fmt::format("a time must be at least 0 s and under 1 s, got {:g}", **cost));
    }
    rec.conv_dispatch = std::move(d);
  }
  if (const auto* mem = r.optional_field(obj, path, "memory")) {
    rec.memory_levels = levels_from_json(r, *mem, path + "/memory", "levels");
  }
  rec.gemm = gemm_from_json(r, obj, path);
  rec.conv = conv_from_json(r, obj, path);
  if (const auto* v = r.optional_field(obj, path, "probes")) {
    if (!v->is_array()) r.fail(path + "/probes", "expected an array");
    rec.probes = *v;
  }
  rec.calibration_s = r.optional_number(obj, path, "calibration_s");
  for (const auto& [key, value] : obj.items()) {
    if (!record_fields().contains(key)) rec.extra[key] = value;
  }
  return rec;
}

TransferFit transfer_from_json(const Reader& r, const json& obj, const std::string& path) {
  TransferFit fit;
  fit.latency_s = r.optional_number(obj, path, "latency_s");
  fit.Bps = r.optional_number(obj, path, "Bps");
  if (const auto* points = r.optional_field(obj, path, "points")) {
    if (!points->is_array()) r.fail(path + "/points", "expected an array");
    for (std::size_t i = 0; i < points->size(); ++i) {
      const auto p = fmt::format("{}/points/{}", path, i);
      fit.points.push_back({r.integer((*points)[i], p, "bytes"), r.number((*points)[i], p, "time_s")});
    }
  }
  return fit;
}

Device device_from_json(const Reader& r, const json& obj, const std::string& path) {
  Device d;
  d.id = r.string(obj, path, "id");
  d.kind = r.string(obj, path, "kind");
  d.name = r.string(obj, path, "name");
  if (const auto* v = r.optional_field(obj, path, "libraries")) d.libraries = *v;
  if (const auto* v = r.optional_field(obj, path, "properties")) d.properties = *v;
  if (const auto* v = r.optional_field(obj, path, "conditions")) d.conditions = *v;
  d.memory_bytes = r.optional_integer(obj, path, "memory_bytes");

  if (const auto* ds = r.optional_field(obj, path, "datasheet")) {
    const auto p = path + "/datasheet";
    d.datasheet.flops_per_s = r.number_map(*ds, p, "flops_per_s");
    d.datasheet.vector_flops_per_s = r.number_map(*ds, p, "vector_flops_per_s");
    d.datasheet.memory_Bps = r.optional_number(*ds, p, "memory_Bps");
    d.datasheet.source = r.optional_string(*ds, p, "source");
  }
  if (const auto* pk = r.optional_field(obj, path, "peaks")) {
    const auto p = path + "/peaks";
    d.peaks.flops_per_s = r.number_map(*pk, p, "flops_per_s");
    d.peaks.vector_flops_per_s = r.number_map(*pk, p, "vector_flops_per_s");
    d.peaks.memory_Bps = r.optional_number(*pk, p, "memory_Bps");
  }
  d.gemm = gemm_from_json(r, obj, path);
  d.conv = conv_from_json(r, obj, path);
  if (const auto* ops = r.optional_field(obj, path, "vector_ops")) {
    if (!ops->is_array()) r.fail(path + "/vector_ops", "expected an array");
    for (std::size_t i = 0; i < ops->size(); ++i) {
      const auto& v = (*ops)[i];
      const auto p = fmt::format("{}/vector_ops/{}", path, i);
      VectorOpPoint pt;
      pt.op = r.string(v, p, "op");
      pt.dtype = r.dtype(v, p);
      pt.rows = r.integer(v, p, "rows");
      pt.cols = r.integer(v, p, "cols");
      pt.timing = r.timing(v, p);
      pt.elements_per_s = r.number(v, p, "elements_per_s");
      pt.impl = r.optional_string(v, p, "impl");
      d.vector_ops.push_back(std::move(pt));
    }
  }
  if (const auto* mem = r.optional_field(obj, path, "memory")) {
    const auto p = path + "/memory";
    if (const auto* sweep = r.optional_field(*mem, p, "sweep")) {
      if (!sweep->is_array()) r.fail(p + "/sweep", "expected an array");
      for (std::size_t i = 0; i < sweep->size(); ++i) {
        const auto& s = (*sweep)[i];
        const auto sp = fmt::format("{}/sweep/{}", p, i);
        MemoryPoint pt;
        pt.kernel = r.string(s, sp, "kernel");
        pt.bytes = r.integer(s, sp, "bytes");
        pt.Bps = r.number(s, sp, "Bps");
        pt.median_Bps = r.optional_number(s, sp, "median_Bps").value_or(pt.Bps);
        d.memory_sweep.push_back(std::move(pt));
      }
    }
    d.memory_levels = levels_from_json(r, *mem, p, "levels");
    d.memory_in_place_levels = levels_from_json(r, *mem, p, "in_place_levels");
  }
  if (const auto* oh = r.optional_field(obj, path, "overhead")) {
    d.overhead_op_s = r.optional_number(*oh, path + "/overhead", "op_s");
    d.overhead_graph_op_s = r.optional_number(*oh, path + "/overhead", "graph_op_s");
  }
  if (const auto* tr = r.optional_field(obj, path, "transfers")) {
    const auto p = path + "/transfers";
    if (!tr->is_object()) r.fail(p, "expected an object");
    for (const auto& [name, value] : tr->items()) {
      if (name == "bidirectional_Bps") continue;
      if (value.is_null()) continue;
      if (!value.is_object()) r.fail(p + "/" + name, "expected an object");
      if (value.empty()) continue;
      d.transfers[name] = transfer_from_json(r, value, p + "/" + name);
    }
    d.bidirectional_Bps = r.optional_number(*tr, p, "bidirectional_Bps");
  }
  if (const auto* sk = r.optional_field(obj, path, "skipped")) {
    if (!sk->is_array()) r.fail(path + "/skipped", "expected an array");
    for (std::size_t i = 0; i < sk->size(); ++i) {
      const auto sp = fmt::format("{}/skipped/{}", path, i);
      d.skipped.push_back({r.string((*sk)[i], sp, "what"), r.string((*sk)[i], sp, "reason")});
    }
  }
  if (const auto* rt = r.optional_field(obj, path, "runtimes")) {
    if (!rt->is_object()) r.fail(path + "/runtimes", "expected an object");
    for (const auto& [key, value] : rt->items()) {
      d.runtimes[key] = record_from_json(r, value, path + "/runtimes/" + key);
    }
  }
  return d;
}

void check_schema_version(const Reader& r, const std::string& version) {
  const auto dot = version.find('.');
  int major = -1;
  try {
    major = std::stoi(version.substr(0, dot));
  } catch (const std::exception&) {
    r.fail("/schema_version", fmt::format("'{}' is not a schema version (expected {}.x)", version, kSchemaMajor));
  }
  if (major != kSchemaMajor) {
    r.fail("/schema_version", fmt::format("schema version {} is not supported: this truepeak reads {}.x profiles",
                                          version, kSchemaMajor));
  }
}

// A measured rate or time that every later figure divides by or multiplies with: it must be a
// positive number no machine could exceed, or an estimate built on it would be absurd. The
// ceilings are orders of magnitude past any device: 1e18 FLOP/s, 1e16 B/s, 1e17 elements/s.
void check_rates(const Reader& r, const json& node, const std::string& path) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      const std::string at = path + "/" + key;
      if (value.is_number()) {
        const double v = value.get<double>();
        const auto ends = [&](std::string_view tail) {
          return key.size() >= tail.size() && key.compare(key.size() - tail.size(), tail.size(), tail) == 0;
        };
        double ceiling = 0;
        if (ends("flops_per_s")) ceiling = 1e18;
        else if (ends("Bps")) ceiling = 1e16;
        else if (ends("elements_per_s")) ceiling = 1e17;
        if (ceiling > 0 && !(v > 0 && v <= ceiling))
          r.fail(at, fmt::format("a rate must be above 0 and at most {:g}, got {:g}", ceiling, v));
        if ((key == "time_s" || key == "median_s") && !(v > 0 && v < 1e6))
          r.fail(at, fmt::format("a time must be above 0 s and under 1e6 s, got {:g}", v));
      } else {
        check_rates(r, value, at);
      }
    }
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) check_rates(r, node[i], fmt::format("{}/{}", path, i));
  }
}

}  // namespace

RuntimeRecord runtime_record_from_json(const nlohmann::json& doc, const std::string& where) {
  return record_from_json(Reader(where), doc, "");
}

Profile profile_from_json(const nlohmann::json& doc, const std::string& where) {
  const Reader r(where);
  if (!doc.is_object()) r.fail("", "expected a JSON object (a truepeak profile)");
  if (const auto devices = doc.find("devices"); devices != doc.end()) check_rates(r, *devices, "/devices");
  Profile p;
  p.schema_version = r.string(doc, "", "schema_version");
  check_schema_version(r, p.schema_version);
  const auto& tool = r.object(doc, "", "tool");
  p.tool.name = r.string(tool, "/tool", "name");
  p.tool.version = r.string(tool, "/tool", "version");
  p.tool.git_sha = r.optional_string(tool, "/tool", "git_sha");
  if (const auto* argv = r.optional_field(tool, "/tool", "argv")) {
    if (!argv->is_array()) r.fail("/tool/argv", "expected an array of strings");
    for (const auto& a : *argv) {
      if (!a.is_string()) r.fail("/tool/argv", "expected an array of strings");
      p.tool.argv.push_back(a.get<std::string>());
    }
  }
  p.created_utc = r.string(doc, "", "created_utc");
  p.complete = r.boolean(doc, "", "complete");
  const auto& m = r.object(doc, "", "machine");
  p.machine.label = r.string(m, "/machine", "label");
  p.machine.hostname = r.optional_string(m, "/machine", "hostname");
  p.machine.os = r.optional_string(m, "/machine", "os");
  p.machine.cpu_model = r.optional_string(m, "/machine", "cpu_model");
  p.machine.cpu_cores = static_cast<int>(r.optional_integer(m, "/machine", "cpu_cores").value_or(0));
  p.machine.memory_bytes = r.optional_integer(m, "/machine", "memory_bytes");
  p.machine.price_per_hour_usd = r.optional_number(m, "/machine", "price_per_hour_usd");
  const auto& devices = r.array(doc, "", "devices");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    p.devices.push_back(device_from_json(r, devices[i], fmt::format("/devices/{}", i)));
  }
  return p;
}

}  // namespace truepeak
