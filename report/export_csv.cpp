// One row per measured point, one column set for every kind of point, so pandas reads it as one
// frame: cells that do not apply to a kind are empty. `bytes` is the minimal traffic of a GEMM or
// convolution (for arithmetic intensity), the working set of a memory point, the size of a
// transfer.
#include <fmt/format.h>

#include "core/dtype.hpp"
#include "report/export.hpp"

namespace truepeak::report {
namespace {

const char* kColumns[] = {"machine",     "device", "device_kind", "what",     "name", "dtype",
                          "layout",      "impl",   "batch",       "m",        "n",    "k",
                          "bytes",       "flops",  "time_s",      "median_s", "cv",   "samples",
                          "flops_per_s", "Bps",    "median_Bps"};
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
  row.cells["cv"] = num(t.cv);
  row.cells["samples"] = num(static_cast<std::int64_t>(t.samples));
}

}  // namespace

ExportResult export_csv(const Profile& profile, const std::vector<const Device*>& devices) {
  std::string out;
  for (std::size_t i = 0; i < kColumnCount; ++i) out += std::string(i ? "," : "") + kColumns[i];
  out += "\n";
  std::size_t count = 0;
  for (const auto* d : devices) {
    auto base = [&](const char* what, const std::string& name) {
      Row r;
      r.cells = {{"machine", profile.machine.label},
                 {"device", d->id},
                 {"device_kind", d->kind},
                 {"what", what},
                 {"name", name}};
      return r;
    };
    for (const auto& p : d->gemm) {
      auto r = base("gemm", p.shape.str() + (p.cold_weights ? " cold weights" : ""));
      r.cells["dtype"] = std::string(to_string(p.shape.dtype));
      r.cells["impl"] = p.impl;
      r.cells["batch"] = num(p.shape.batch);
      r.cells["m"] = num(p.shape.m);
      r.cells["n"] = num(p.shape.n);
      r.cells["k"] = num(p.shape.k);
      r.cells["bytes"] = num(p.shape.bytes());
      r.cells["flops"] = num(p.shape.flops());
      put_timing(r, p.timing);
      r.cells["flops_per_s"] = num(p.flops_per_s);
      out += r.to_line();
      ++count;
    }
    for (const auto& p : d->conv) {
      auto r = base("conv", p.shape.str() + (p.cold_weights ? " cold weights" : ""));
      r.cells["dtype"] = std::string(to_string(p.shape.dtype));
      r.cells["layout"] = p.layout;
      r.cells["impl"] = p.impl;
      r.cells["batch"] = num(p.shape.n);
      r.cells["bytes"] = num(p.shape.bytes());
      r.cells["flops"] = num(p.shape.flops());
      put_timing(r, p.timing);
      r.cells["flops_per_s"] = num(p.flops_per_s);
      out += r.to_line();
      ++count;
    }
    for (const auto& p : d->memory_sweep) {
      auto r = base("memory", p.kernel);
      r.cells["bytes"] = num(p.bytes);
      r.cells["Bps"] = num(p.Bps);
      r.cells["median_Bps"] = num(p.median_Bps);
      out += r.to_line();
      ++count;
    }
    for (const auto& [name, fit] : d->transfers) {
      for (const auto& p : fit.points) {
        auto r = base("transfer", name);
        r.cells["bytes"] = num(p.bytes);
        r.cells["time_s"] = num(p.time_s);
        if (p.time_s > 0) r.cells["Bps"] = num(static_cast<double>(p.bytes) / p.time_s);
        out += r.to_line();
        ++count;
      }
    }
  }
  return {out, {fmt::format("{} points from {} device(s)", count, devices.size())}};
}

}  // namespace truepeak::report
