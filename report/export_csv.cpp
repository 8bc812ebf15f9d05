// One row per measured point, one column set for every kind of point, so pandas reads it as one
// frame: cells that do not apply to a kind are empty. Every dimension and attribute has a column of
// its own; `name` repeats the point's canonical string (benchdnn-style) for grepping. (device,
// what, index) is the key: calibrate can measure one configuration twice (a layer asked for in
// oneDNN's own choice of layout and again in the layout that choice resolved to), and the profile
// records the layout that ran, so such twins differ in `index` and their timing alone.
// `bytes` is the minimal traffic of a GEMM, convolution or vector op (for arithmetic intensity),
// the working set of a memory point, the size of a transfer.
#include <fmt/format.h>

#include <map>

#include "core/dtype.hpp"
#include "report/export.hpp"

namespace truepeak::report {
namespace {

// GEMM: m, n, k, batch. Convolution: batch (mb) and benchdnn's ic, ih, iw, oc, kh, kw, with
// stride, pad, dilation, groups. Vector op: rows, cols.
// clang-format off
const char* kColumns[] = {
    "machine", "device", "device_kind", "what", "index", "name",
    "dtype", "layout", "cold_weights", "impl", "op",
    "batch", "m", "n", "k",
    "ic", "ih", "iw", "oc", "kh", "kw", "stride", "pad", "dilation", "groups",
    "rows", "cols",
    "bytes", "flops", "elements",
    "time_s", "median_s", "typical_s", "cv", "samples",
    "flops_per_s", "elements_per_s", "Bps", "median_Bps"};
// clang-format on
constexpr std::size_t kColumnCount = sizeof(kColumns) / sizeof(kColumns[0]);

std::string quote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string num(double v) { return fmt::format("{}", v); }
std::string num(std::int64_t v) { return fmt::format("{}", v); }

struct Row {
  std::map<std::string, std::string> cells;
  std::string to_line() const {
    std::string out;
    for (std::size_t i = 0; i < kColumnCount; ++i) {
      if (i) out += ',';
      if (auto it = cells.find(kColumns[i]); it != cells.end()) out += quote(it->second);
    }
    return out + "\n";
  }
};

void put_timing(Row& row, const Timing& t) {
  row.cells["time_s"] = num(t.time_s);
  row.cells["median_s"] = num(t.median_s);
  if (t.typical_s > 0) row.cells["typical_s"] = num(t.typical_s);  // 0: not recorded
  row.cells["cv"] = num(t.cv);
  row.cells["samples"] = num(static_cast<std::int64_t>(t.samples));
}

// The profile's GEMM layout names cold weights too ("row-major, cold weights"); they have a column.
std::string gemm_layout(const GemmPoint& p) {
  const std::string suffix = ", cold weights";
  const auto& layout = p.layout;
  if (p.cold_weights && layout.size() >= suffix.size() &&
      layout.compare(layout.size() - suffix.size(), suffix.size(), suffix) == 0)
    return layout.substr(0, layout.size() - suffix.size());
  return layout;
}

}  // namespace

ExportResult export_csv(const Profile& profile, const std::vector<const Device*>& devices) {
  std::string out;
  for (std::size_t i = 0; i < kColumnCount; ++i) out += std::string(i ? "," : "") + kColumns[i];
  out += "\n";
  std::size_t count = 0;
  for (const auto* d : devices) {
    std::map<std::string, std::int64_t> next_index;
    auto base = [&](const char* what, const std::string& name) {
      Row r;
      r.cells = {{"machine", profile.machine.label}, {"device", d->id},
                 {"device_kind", d->kind},           {"what", what},
                 {"index", num(next_index[what]++)}, {"name", name}};
      return r;
    };
    auto emit = [&](const Row& r) {
      out += r.to_line();
      ++count;
    };
    for (const auto& p : d->gemm) {
      auto r = base("gemm", p.shape.str());
      r.cells["dtype"] = std::string(to_string(p.shape.dtype));
      r.cells["layout"] = gemm_layout(p);
      r.cells["cold_weights"] = p.cold_weights ? "true" : "false";
      r.cells["impl"] = p.impl;
      r.cells["batch"] = num(p.shape.batch);
      r.cells["m"] = num(p.shape.m);
      r.cells["n"] = num(p.shape.n);
      r.cells["k"] = num(p.shape.k);
      r.cells["bytes"] = num(p.shape.bytes());
      r.cells["flops"] = num(p.shape.flops());
      put_timing(r, p.timing);
      r.cells["flops_per_s"] = num(p.flops_per_s);
      emit(r);
    }
    for (const auto& p : d->conv) {
      const auto& s = p.shape;
      auto r = base("conv", s.str());
      r.cells["dtype"] = std::string(to_string(s.dtype));
      r.cells["layout"] = p.layout;
      r.cells["cold_weights"] = p.cold_weights ? "true" : "false";
      r.cells["impl"] = p.impl;
      r.cells["batch"] = num(s.n);
      r.cells["ic"] = num(s.c);
      r.cells["ih"] = num(s.h);
      r.cells["iw"] = num(s.w);
      r.cells["oc"] = num(s.k);
      r.cells["kh"] = num(s.r);
      r.cells["kw"] = num(s.s);
      r.cells["stride"] = num(s.stride);
      r.cells["pad"] = num(s.pad);
      r.cells["dilation"] = num(s.dilation);
      r.cells["groups"] = num(s.groups);
      r.cells["bytes"] = num(s.bytes());
      r.cells["flops"] = num(s.flops());
      put_timing(r, p.timing);
      r.cells["flops_per_s"] = num(p.flops_per_s);
      emit(r);
    }
    for (const auto& p : d->vector_ops) {
      const VectorOpShape shape{p.op, p.dtype, p.rows, p.cols};
      auto r = base("vector_op", shape.str());
      r.cells["dtype"] = std::string(to_string(p.dtype));
      r.cells["impl"] = p.impl;
      r.cells["op"] = p.op;
      r.cells["rows"] = num(p.rows);
      r.cells["cols"] = num(p.cols);
      r.cells["bytes"] = num(shape.bytes());
      r.cells["elements"] = num(shape.elements());
      put_timing(r, p.timing);
      r.cells["elements_per_s"] = num(p.elements_per_s);
      emit(r);
    }
    for (const auto& p : d->memory_sweep) {
      auto r = base("memory", p.kernel);
      r.cells["op"] = p.kernel;
      r.cells["bytes"] = num(p.bytes);
      r.cells["Bps"] = num(p.Bps);
      r.cells["median_Bps"] = num(p.median_Bps);
      emit(r);
    }
    for (const auto& [kind, fit] : d->transfers) {
      for (const auto& p : fit.points) {
        auto r = base("transfer", kind);
        r.cells["op"] = kind;
        r.cells["bytes"] = num(p.bytes);
        r.cells["time_s"] = num(p.time_s);
        if (p.time_s > 0) r.cells["Bps"] = num(static_cast<double>(p.bytes) / p.time_s);
        emit(r);
      }
    }
  }
  return {out, {fmt::format("{} points from {} device(s)", count, devices.size())}, {}};
}

}  // namespace truepeak::report
