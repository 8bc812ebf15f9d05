#include "estimate/print.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/units.hpp"
#include "truepeak/version.hpp"

namespace truepeak::estimate {
namespace {

using nlohmann::json;

// Aligned text or markdown from rows of cells; the first column left-aligned, the rest right.
std::string render(const std::vector<std::string>& header,
                   const std::vector<std::vector<std::string>>& rows, bool markdown) {
  std::string out;
  if (markdown) {
    auto line = [&](const std::vector<std::string>& cells) {
      out += "|";
      for (const auto& c : cells) out += " " + c + " |";
      out += "\n";
    };
    line(header);
    out += "|";
    for (std::size_t i = 0; i < header.size(); ++i) out += i == 0 ? "---|" : "---:|";
    out += "\n";
    for (const auto& r : rows) line(r);
    return out;
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], r[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      out += i == 0 ? fmt::format("{:<{}}", cells[i], width[i])
                    : fmt::format("  {:>{}}", cells[i], width[i]);
    }
    out += "\n";
  };
  line(header);
  std::size_t total = 0;
  for (auto w : width) total += w + 2;
  out += std::string(total - 2, '-') + "\n";
  for (const auto& r : rows) line(r);
  return out;
}

std::string gflop(double flops) { return fmt::format("{:.3f}", flops / 1e9); }
std::string mbytes(double bytes) { return fmt::format("{:.2f}", bytes / 1e6); }
std::string gbytes(double bytes) { return fmt::format("{:.2f} GB", bytes / 1e9); }

json totals_json(const Totals& t) {
  return {{"time_s", t.time_s},
          {"naive_s", t.naive_s},
          {"flops", t.flops},
          {"bytes", t.bytes},
          {"overhead_s", t.overhead_s}};
}

json memory_json(const MemoryBreakdown& m) {
  return {{"weights_bytes", m.weights_bytes},
          {"master_weights_bytes", m.master_weights_bytes},
          {"gradients_bytes", m.gradients_bytes},
          {"optimizer_bytes", m.optimizer_bytes},
          {"activations_bytes", m.activations_bytes},
          {"kv_cache_bytes", m.kv_cache_bytes},
          {"total_bytes", m.total_bytes},
          {"device_bytes", m.device_bytes ? json(*m.device_bytes) : json(nullptr)},
          {"usable_bytes", m.device_bytes ? json(m.usable_bytes) : json(nullptr)},
          {"fits", m.fits}};
}

std::string header_line(const Estimate& e, const PrintContext& ctx) {
  std::string s = fmt::format("{} on {} ({}), {}, {}", e.model, e.device_id,
                              ctx.profile_label.empty() ? ctx.profile_path : ctx.profile_label,
                              to_string(e.dtype), to_string(e.mode));
  if (e.mode == Mode::training) s += fmt::format(" with {}", to_string(e.optimizer));
  if (!ctx.runtime.empty()) s += fmt::format(", runtime {}", ctx.runtime);
  s += fmt::format(", batch {}", e.batch);
  if (e.seq) s += fmt::format(", seq {}", *e.seq);
  if (e.context) s += fmt::format(", decode context {}", *e.context);
  return s;
}

// What the runtime's fusion rules did, in one line.
std::string fusion_note(const FusionApplied& f, const PrintContext& ctx) {
  const auto counted = [](const FusionCounts& c) {
    if (c.ops == 0) return std::string("no chain (each op a kernel of its own)");
    return fmt::format("{} op{} into {} kernel{}", c.ops, c.ops == 1 ? "" : "s", c.kernels,
                       c.kernels == 1 ? "" : "s");
  };
  std::string s = fmt::format("{}: fused {}", ctx.runtime.empty() ? "fusion" : "runtime " + ctx.runtime,
                              counted(f.forward));
  if (f.decode) s += fmt::format(" (decode step: {})", counted(*f.decode));
  if (f.graph_s > 0) s += fmt::format("; one graph call {} a pass", format_time_s(f.graph_s));
  return s;
}

json fusion_json(const FusionApplied& f) {
  const auto counts = [](const FusionCounts& c) { return json{{"kernels", c.kernels}, {"ops", c.ops}}; };
  return {{"forward", counts(f.forward)},
          {"decode", f.decode ? counts(*f.decode) : json(nullptr)},
          {"graph_s", f.graph_s}};
}

std::string memory_text(const MemoryBreakdown& m, std::optional<std::int64_t> max_batch) {
  std::vector<std::vector<std::string>> rows;
  auto add = [&](const char* what, double bytes) {
    if (bytes > 0) rows.push_back({what, gbytes(bytes)});
  };
  add("weights", m.weights_bytes);
  add("fp32 master weights", m.master_weights_bytes);
  add("gradients", m.gradients_bytes);
  add("optimizer states", m.optimizer_bytes);
  add("activations", m.activations_bytes);
  add("KV cache", m.kv_cache_bytes);
  rows.push_back({"total", gbytes(m.total_bytes)});
  if (m.device_bytes) {
    rows.push_back({"device memory", gbytes(*m.device_bytes)});
    rows.push_back({"usable (20% headroom)", gbytes(m.usable_bytes)});
    rows.push_back({"fits", m.fits ? "yes" : "NO"});
  } else {
    rows.push_back({"device memory", "unknown (not in the profile)"});
  }
  if (max_batch) rows.push_back({"largest batch that fits", std::to_string(*max_batch)});
  return render({"memory", "bytes"}, rows, false);
}

// The sizes taken as given, one line each, where a reader of the figures sees them.
std::string assumption_text(const PrintContext& ctx) {
  std::string out;
  for (const auto& line : ctx.assumption_lines) out += "assumed: " + line + "\n";
  return out.empty() ? out : out + "\n";
}

}  // namespace

json estimate_to_json(const Estimate& e, const PrintContext& ctx) {
  json ops = json::array();
  for (const auto& r : e.ops) {
    ops.push_back({{"name", r.name},
                   {"kind", r.kind},
                   {"phase", r.phase},
                   {"shape", r.shape},
                   {"flops", r.flops},
                   {"bytes", r.bytes},
                   {"compute_s", r.compute_s},
                   {"memory_s", r.memory_s},
                   {"overhead_s", r.overhead_s},
                   {"time_s", r.time_s},
                   {"bound", r.compute_bound ? "compute" : "memory"},
                   {"achieved_flops_per_s", r.achieved_flops_per_s},
                   {"peak_fraction", r.peak_fraction},
                   {"naive_s", r.naive_s}});
    if (!r.fused.empty()) ops.back()["fused"] = r.fused;
  }
  json doc = {
      {"schema_version", "1.0"},
      {"tool",
       {{"name", "truepeak"}, {"version", TRUEPEAK_VERSION}, {"git_sha", TRUEPEAK_GIT_SHA}}},
      {"profile", ctx.profile_path},
      {"runtime", ctx.runtime.empty() ? json(nullptr) : json(ctx.runtime)},
      {"model", e.model},
      {"device", e.device_id},
      {"dtype", std::string(to_string(e.dtype))},
      {"mode", std::string(to_string(e.mode))},
      {"batch", e.batch},
      {"seq", e.seq ? json(*e.seq) : json(nullptr)},
      {"params", e.params},
      {"latency_s", e.latency_s},
      {"naive_latency_s", e.naive_latency_s},
      {"throughput_per_s", e.throughput_per_s},
      {"throughput_unit", e.throughput_unit},
      {"forward", totals_json(e.forward)},
      {"memory", memory_json(e.memory)},
      {"max_batch", ctx.max_batch ? json(*ctx.max_batch) : json(nullptr)},
      {"ops", ops}};
  if (e.mode == Mode::training) doc["optimizer"] = std::string(to_string(e.optimizer));
  if (e.decode) {
    doc["decode"] = totals_json(*e.decode);
    doc["context"] = e.context ? json(*e.context) : json(nullptr);
    doc["time_to_first_token_s"] = e.forward.time_s;
    doc["time_per_output_token_s"] = e.decode->time_s;
  }
  if (e.fusion) doc["fusion"] = fusion_json(*e.fusion);
  if (!ctx.assumptions.is_null()) doc["assumptions"] = ctx.assumptions;
  if (e.backward) doc["backward"] = totals_json(*e.backward);
  if (e.optimizer_step) doc["optimizer_step"] = totals_json(*e.optimizer_step);
  return doc;
}

std::string format_estimate(const Estimate& e, const PrintContext& ctx, Format format) {
  if (format == Format::json) return estimate_to_json(e, ctx).dump(2) + "\n";
  const bool md = format == Format::markdown;
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : e.ops)
    rows.push_back({r.name, r.phase, r.kind, r.shape, gflop(r.flops), mbytes(r.bytes),
                    r.compute_bound ? "compute" : "memory", format_time_s(r.time_s),
                    format_percent(r.peak_fraction), format_time_s(r.naive_s)});
  std::string out = md ? "## " + header_line(e, ctx) + "\n\n" : header_line(e, ctx) + "\n\n";
  if (e.fusion) out += fusion_note(*e.fusion, ctx) + "\n\n";
  out += assumption_text(ctx);
  if (!rows.empty())
    out +=
        render({"op", "phase", "kind", "shape", "GFLOP", "MB", "bound", "time", "% peak", "naive"},
               rows, md) +
        "\n";

  std::vector<std::vector<std::string>> totals;
  auto add = [&](const std::string& what, const Totals& t) {
    totals.push_back({what, format_time_s(t.time_s), format_time_s(t.naive_s), gflop(t.flops),
                      mbytes(t.bytes), format_time_s(t.overhead_s)});
  };
  if (e.mode == Mode::inference) {
    add(e.decode ? "prefill (time to first token)" : "forward", e.forward);
    if (e.decode) add("decode (per output token)", *e.decode);
  } else {
    add("forward", e.forward);
    if (e.backward) add("backward", *e.backward);
    if (e.optimizer_step) add("optimizer", *e.optimizer_step);
    totals.push_back({"training step", format_time_s(e.latency_s), format_time_s(e.naive_latency_s),
                      "", "", ""});
  }
  out += render({"phase", "predicted", "naive roofline", "GFLOP", "MB", "of which overhead"},
                totals, md) +
         "\n";
  out += fmt::format("throughput: {:.1f} {} (naive roofline: {:.1f})\n", e.throughput_per_s,
                     e.throughput_unit,
                     e.decode ? static_cast<double>(e.batch) / e.decode->naive_s
                              : static_cast<double>(e.batch) / e.naive_latency_s);
  out += fmt::format("parameters: {:.2f} M\n\n", e.params / 1e6);
  out += md ? "```\n" + memory_text(e.memory, ctx.max_batch) + "```\n"
            : memory_text(e.memory, ctx.max_batch);
  return out;
}

json sweep_to_json(const Sweep& s, const PrintContext& ctx) {
  json rows = json::array();
  for (const auto& e : s.rows) {
    json r = estimate_to_json(e, ctx);
    r.erase("ops");
    r.erase("tool");
    r.erase("assumptions");  // once, for the whole sweep
    rows.push_back(r);
  }
  return {{"schema_version", "1.0"},
          {"tool",
           {{"name", "truepeak"}, {"version", TRUEPEAK_VERSION}, {"git_sha", TRUEPEAK_GIT_SHA}}},
          {"profile", ctx.profile_path},
          {"runtime", ctx.runtime.empty() ? json(nullptr) : json(ctx.runtime)},
          {"max_latency_s", s.max_latency_s ? json(*s.max_latency_s) : json(nullptr)},
          {"max_batch", s.max_batch ? json(*s.max_batch) : json(nullptr)},
          {"best_batch", s.best ? json(s.rows[*s.best].batch) : json(nullptr)},
          {"assumptions", ctx.assumptions},
          {"rows", rows}};
}

std::string format_sweep(const Sweep& s, const PrintContext& ctx, Format format) {
  if (format == Format::json) return sweep_to_json(s, ctx).dump(2) + "\n";
  const bool md = format == Format::markdown;
  std::string out;
  if (!s.rows.empty())
    out += (md ? "## " : "") + header_line(s.rows.front(), ctx) + " .. " +
           std::to_string(s.rows.back().batch) + " (batch sweep)\n\n";
  out += assumption_text(ctx);
  const bool decoder = !s.rows.empty() && s.rows.front().decode.has_value();
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    const auto& e = s.rows[i];
    std::vector<std::string> r{std::to_string(e.batch), format_time_s(e.latency_s)};
    if (decoder) r.push_back(format_time_s(e.decode->time_s));
    r.push_back(fmt::format("{:.1f}", e.throughput_per_s));
    r.push_back(format_time_s(e.naive_latency_s));
    r.push_back(gbytes(e.memory.total_bytes));
    r.push_back(e.memory.device_bytes ? (e.memory.fits ? "yes" : "no") : "?");
    r.push_back(s.best && *s.best == i ? "<- best" : "");
    rows.push_back(std::move(r));
  }
  std::vector<std::string> header{"batch", decoder ? "prefill" : "latency"};
  if (decoder) header.push_back("per token");
  header.push_back(s.rows.empty() ? "throughput" : s.rows.front().throughput_unit);
  header.push_back("naive");
  header.push_back("memory");
  header.push_back("fits");
  header.push_back("");
  out += render(header, rows, md) + "\n";
  if (s.best) {
    const auto& b = s.rows[*s.best];
    out += fmt::format(
        "best throughput{}: batch {} at {:.1f} {}\n",
        s.max_latency_s ? fmt::format(" within {}", format_time_s(*s.max_latency_s)) : "", b.batch,
        b.throughput_per_s, b.throughput_unit);
  } else {
    out += "no batch size fits the memory and latency limits\n";
  }
  if (s.max_batch) out += fmt::format("largest batch that fits in memory: {}\n", *s.max_batch);
  return out;
}

}  // namespace truepeak::estimate
