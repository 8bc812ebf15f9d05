#include "report/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/table.hpp"
#include "core/units.hpp"

namespace truepeak::report {

std::optional<double> CompareRow::ratio_to_first(std::size_t column) const {
  if (cells.empty() || column >= cells.size()) return std::nullopt;
  return ratio(cells[column].value, cells.front().value);
}

std::optional<double> CompareRow::of_datasheet(std::size_t column) const {
  if (column >= cells.size()) return std::nullopt;
  return ratio(cells[column].value, cells[column].datasheet);
}

namespace {

using nlohmann::json;

template <class Key>
std::vector<std::string> union_of(const std::vector<DeviceView>& views, Key key) {
  std::vector<std::string> out;
  for (const auto& v : views) {
    for (const auto& name : key(*v.device)) {
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
  }
  return out;
}

void add_row(std::vector<CompareRow>& rows, CompareRow row) {
  const bool any = std::any_of(row.cells.begin(), row.cells.end(),
                               [](const auto& c) { return c.value.has_value(); });
  if (any) rows.push_back(std::move(row));
}

std::string format_value(const std::string& unit, std::optional<double> v) {
  if (!v) return "-";
  if (unit == "flops_per_s") return format_flops_per_s(*v);
  if (unit == "Bps") return format_Bps(*v);
  if (unit == "s") return format_time_s(*v);
  return fmt::format("{:.4g}", *v);
}

std::string format_cell(const CompareRow& row, std::size_t column) {
  const auto& cell = row.cells[column];
  if (!cell.value) return "-";
  std::string out = format_value(row.unit, cell.value);
  if (column > 0) {
    if (auto r = row.ratio_to_first(column)) out += fmt::format("  {:.2f}x", *r);
  }
  if (auto ds = row.of_datasheet(column)) out += fmt::format("  ({:.0f}% ds)", *ds * 100);
  return out;
}

json optional_json(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

TextTable figures_table(const Comparison& c) {
  std::vector<std::string> header{"figure"};
  for (const auto& col : c.columns) header.push_back(col.label);
  TextTable t(std::move(header));
  for (const auto& row : c.rows) {
    std::vector<std::string> cells{row.group + " " + row.name};
    for (std::size_t i = 0; i < c.columns.size(); ++i) cells.push_back(format_cell(row, i));
    t.add_row(std::move(cells));
  }
  return t;
}

TextTable devices_table(const Comparison& c) {
  TextTable t({"device", "kind", "name", "price"});
  t.set_left_columns({0, 1, 2});
  for (const auto& col : c.columns) {
    t.add_row(
        {col.label, col.device_kind, col.device_name,
         col.price_per_hour_usd ? fmt::format("${:.2f}/h", *col.price_per_hour_usd) : "-"});
  }
  return t;
}

std::string optional_usd(std::optional<double> usd) {
  return usd ? format_plain(*usd) : std::string("- (no price)");
}

std::string row_note(const CostRow& r) {
  return join_notes({r.cheapest ? "<- cheapest" : "", r.fits ? "" : "does not fit in memory",
                     r.limit ? limit_note(r.batch, *r.limit) : ""});
}

TextTable cost_table(const Comparison& c, const CostTable& cost) {
  const bool decoder = cost.workload.decoder;
  const bool batches = !cost.batch.has_value();
  std::vector<std::string> header{"device"};
  if (batches) header.push_back("batch");
  if (decoder) {
    for (const char* h : {"first token", "per output token", "requests/s", "decode tok/s",
                          "USD/1M in", "USD/1M out", "datasheet-roofline first / per token"})
      header.push_back(h);
  } else {
    for (const char* h :
         {"latency", "inferences/s", "USD per 1M", "datasheet-roofline latency"})
      header.push_back(h);
  }
  header.push_back("");
  const std::size_t width = header.size();
  TextTable t(std::move(header));
  t.set_left_columns({0, width - 1});
  for (const auto& r : cost.rows) {
    std::vector<std::string> cells{c.columns[r.column].label};
    if (!r.error.empty() || !r.unmet.empty()) {
      cells.resize(width - 1, "-");
      cells.push_back(r.error.empty() ? r.unmet : "cannot estimate: " + r.error);
      t.add_row(std::move(cells));
      continue;
    }
    if (batches) cells.push_back(std::to_string(r.batch));
    cells.push_back(format_time_s(r.latency_s));
    if (decoder) {
      cells.push_back(r.decode_s ? format_time_s(*r.decode_s) : "-");
      cells.push_back(format_plain(r.inferences_per_s));
      cells.push_back(r.tokens_per_s ? format_plain(*r.tokens_per_s) : "-");
      cells.push_back(optional_usd(r.usd_per_million_input));
      cells.push_back(optional_usd(r.usd_per_million));
      cells.push_back(r.naive_latency_s && r.naive_decode_s
                          ? format_time_s(*r.naive_latency_s) + " / " +
                                format_time_s(*r.naive_decode_s)
                          : "-");
    } else {
      cells.push_back(format_plain(r.inferences_per_s));
      cells.push_back(optional_usd(r.usd_per_million));
      cells.push_back(r.naive_latency_s ? format_time_s(*r.naive_latency_s) : "-");
    }
    cells.push_back(row_note(r));
    t.add_row(std::move(cells));
  }
  return t;
}

std::string legend() {
  return "Ratios: Nx = this device / the first column; (P% ds) = measured / datasheet of the same "
         "device.\n";
}

// What one unit of work is, and how the table is ordered.
std::string cost_heading(const CostTable& cost) {
  const auto& w = cost.workload;
  std::string out = fmt::format("Model {}: {}.\n", w.model, describe_workload(w, cost.batch));
  if (cost.max_latency_s) {
    out += fmt::format("Each device at the largest batch whose {} is at most {}.\n",
                       w.decoder ? "time per output token" : "latency (one pass of the batch)",
                       format_time_s(*cost.max_latency_s));
  }
  if (w.decoder) {
    out += "first token: time to first token, the prefill of the batch's prompts; per output "
           "token: one decode step of the batch;\n"
           "requests/s: a prefill, then a decode step per further token; decode tok/s: batch / "
           "decode step;\n"
           "USD/1M in: per million prompt tokens, at the prefill; USD/1M out: per million output "
           "tokens, a decode step each.\n"
           "Sorted by cost per output token:\n";
  } else {
    out += "Sorted by cost per million inferences:\n";
  }
  return out;
}

}  // namespace

Comparison compare_profiles(const std::vector<Profile>& profiles,
                            const std::map<std::string, double>& prices,
                            const std::vector<std::string>& sources) {
  check_price_labels(profiles, prices);
  Comparison c;
  const auto views = all_devices(profiles);
  const auto labels = device_labels(profiles, sources);
  for (std::size_t i = 0; i < views.size(); ++i) {
    const auto& v = views[i];
    c.columns.push_back({labels[i], v.profile->machine.label, v.device->id, v.device->kind,
                         v.device->name, price_of(*v.profile, prices)});
  }

  auto row_of = [&](std::string group, std::string name, std::string unit, auto cell_of) {
    CompareRow row{std::move(group), std::move(name), std::move(unit), {}};
    for (const auto& v : views) row.cells.push_back(cell_of(*v.device));
    add_row(c.rows, std::move(row));
  };

  const auto dtypes = in_dtype_order(union_of(views, [](const Device& d) { return gemm_dtypes(d); }));
  for (const auto& dt : dtypes) {
    row_of("gemm", dt, "flops_per_s", [&](const Device& d) {
      return CompareCell{best_gemm_flops_per_s(d, dt), datasheet_flops_per_s(d, dt)};
    });
  }
  const auto conv_types = in_dtype_order(union_of(views, [](const Device& d) { return conv_dtypes(d); }));
  for (const auto& dt : conv_types) {
    row_of("conv", dt + " (best layer)", "flops_per_s", [&](const Device& d) {
      return CompareCell{best_conv_flops_per_s(d, dt), datasheet_flops_per_s(d, dt)};
    });
  }
  const auto vector_dtypes = in_dtype_order(union_of(views, [](const Device& d) {
    std::vector<std::string> names;
    for (const auto& [name, v] : d.peaks.vector_flops_per_s) names.push_back(name);
    return names;
  }));
  for (const auto& dt : vector_dtypes) {
    row_of("vector", dt, "flops_per_s", [&](const Device& d) {
      CompareCell cell;
      if (auto it = d.peaks.vector_flops_per_s.find(dt); it != d.peaks.vector_flops_per_s.end())
        cell.value = it->second;
      if (auto it = d.datasheet.vector_flops_per_s.find(dt);
          it != d.datasheet.vector_flops_per_s.end()) {
        cell.datasheet = it->second;
      }
      return cell;
    });
  }
  // DRAM on one box and HBM on another share this row: it is the figure a large model streams at.
  row_of("memory", "main (DRAM/HBM)", "Bps", [](const Device& d) {
    return CompareCell{main_memory_Bps(d), d.datasheet.memory_Bps};
  });
  const auto levels = ordered_level_names(union_of(views, [](const Device& d) {
    std::vector<std::string> names;
    for (const auto& l : d.memory_levels) names.push_back(l.name);
    return names;
  }));
  for (const auto& level : levels) {
    row_of("memory", level, "Bps", [&](const Device& d) {
      return CompareCell{level_Bps(d, level), std::nullopt};
    });
  }
  const auto transfers = union_of(views, [](const Device& d) {
    std::vector<std::string> names;
    for (const auto& [name, fit] : d.transfers) names.push_back(name);
    return names;
  });
  for (const auto& t : transfers) {
    auto fit_of = [&](const Device& d) -> const TransferFit* {
      auto it = d.transfers.find(t);
      return it == d.transfers.end() ? nullptr : &it->second;
    };
    row_of("transfer", t, "Bps", [&](const Device& d) {
      const auto* f = fit_of(d);
      return CompareCell{f ? f->Bps : std::nullopt, std::nullopt};
    });
    row_of("transfer", t + " latency", "s", [&](const Device& d) {
      const auto* f = fit_of(d);
      return CompareCell{f ? f->latency_s : std::nullopt, std::nullopt};
    });
  }
  row_of("transfer", "bidirectional", "Bps", [](const Device& d) {
    return CompareCell{d.bidirectional_Bps, std::nullopt};
  });
  row_of("overhead", "op", "s", [](const Device& d) {
    return CompareCell{d.overhead_op_s, std::nullopt};
  });
  row_of("overhead", "graph op", "s", [](const Device& d) {
    return CompareCell{d.overhead_graph_op_s, std::nullopt};
  });
  // A runtime's fixed cost per op: what a model of many small ops pays on top of the library;
  // then the best of the runtime's own GEMM and convolution points (warm weights), where it has
  // kernels of its own: what its large products run at, beside the library's rows above.
  for (const auto& key : runtime_keys(profiles)) {
    auto record_of = [&](const Device& d) -> const RuntimeRecord* {
      const auto it = d.runtimes.find(key);
      return it == d.runtimes.end() ? nullptr : &it->second;
    };
    row_of("runtime", key + " op", "s", [&](const Device& d) {
      const auto* r = record_of(d);
      return CompareCell{r ? std::optional<double>(r->op_s) : std::nullopt, std::nullopt};
    });
    const auto runtime_dtypes = in_dtype_order(union_of(views, [&](const Device& d) {
      std::vector<std::string> names;
      if (const auto* r = record_of(d)) {
        for (const auto& p : r->gemm) names.push_back(std::string(to_string(p.shape.dtype)));
        for (const auto& p : r->conv) names.push_back(std::string(to_string(p.shape.dtype)));
      }
      return names;
    }));
    for (const auto& dt : runtime_dtypes) {
      row_of("runtime", key + " gemm " + dt, "flops_per_s", [&](const Device& d) {
        const auto* r = record_of(d);
        return CompareCell{r ? best_warm_flops_per_s(r->gemm, dt) : std::nullopt, std::nullopt};
      });
      row_of("runtime", key + " conv " + dt + " (best layer)", "flops_per_s", [&](const Device& d) {
        const auto* r = record_of(d);
        return CompareCell{r ? best_warm_flops_per_s(r->conv, dt) : std::nullopt, std::nullopt};
      });
    }
  }
  return c;
}

namespace {

CostRow cost_row(const Workload& w, std::size_t column, std::int64_t batch, const Prediction& p,
                 std::optional<double> price) {
  CostRow row;
  row.column = column;
  row.batch = batch;
  row.error = p.error;
  if (!row.error.empty()) return row;
  row.latency_s = p.latency_s;
  row.decode_s = p.decode_s;
  row.naive_latency_s = p.naive_latency_s;
  row.naive_decode_s = p.naive_decode_s;
  row.fits = p.fits;
  const double n = static_cast<double>(batch);
  row.inferences_per_s = requests_per_s(w, p, batch);
  if (w.decoder && p.decode_s && *p.decode_s > 0) row.tokens_per_s = n / *p.decode_s;
  if (!price) return row;
  if (w.decoder && p.decode_s) {
    if (*p.decode_s > 0) row.usd_per_million = usd_per_million(*price, *p.decode_s, n);
    const double prompt_tokens = n * static_cast<double>(w.seq.value_or(0));
    if (p.latency_s > 0 && prompt_tokens > 0)
      row.usd_per_million_input = usd_per_million(*price, p.latency_s, prompt_tokens);
  } else if (p.latency_s > 0) {
    row.usd_per_million = usd_per_million(*price, p.latency_s, n);
  }
  return row;
}

void sort_and_mark(std::vector<CostRow>& rows) {
  auto usable = [](const CostRow& r) {
    return r.error.empty() && r.unmet.empty() && r.fits && r.usd_per_million.has_value();
  };
  auto figures = [](const CostRow& r) { return r.error.empty() && r.unmet.empty(); };
  std::stable_sort(rows.begin(), rows.end(), [&](const CostRow& a, const CostRow& b) {
    if (figures(a) != figures(b)) return figures(a);
    if (usable(a) != usable(b)) return usable(a);
    if (a.usd_per_million && b.usd_per_million && *a.usd_per_million != *b.usd_per_million)
      return *a.usd_per_million < *b.usd_per_million;
    return a.latency_s < b.latency_s;
  });
  mark_cheapest(rows, [&](const CostRow& r) {
    return usable(r) ? r.usd_per_million : std::optional<double>();
  });
}

}  // namespace

void add_cost(Comparison& comparison, const std::vector<Profile>& profiles,
              const Workload& workload, std::int64_t batch, const Predictor& predict) {
  CostTable cost{workload, batch, std::nullopt, {}};
  const auto views = all_devices(profiles);
  for (std::size_t i = 0; i < views.size(); ++i) {
    const auto p = predict(*views[i].profile, *views[i].device, batch);
    cost.rows.push_back(
        cost_row(workload, i, batch, p, comparison.columns[i].price_per_hour_usd));
  }
  sort_and_mark(cost.rows);
  comparison.cost = std::move(cost);
}

void add_cost_within(Comparison& comparison, const std::vector<Profile>& profiles,
                     const Workload& workload, double max_latency_s, const Predictor& predict) {
  CostTable cost{workload, std::nullopt, max_latency_s, {}};
  const auto views = all_devices(profiles);
  for (std::size_t i = 0; i < views.size(); ++i) {
    const auto search = largest_batch_within(max_latency_s, [&](std::int64_t batch) {
      return predict(*views[i].profile, *views[i].device, batch);
    });
    if (search.batch == 0) {
      CostRow row;
      row.column = i;
      if (!search.prediction.error.empty())
        row.error = search.prediction.error;
      else
        row.unmet = no_batch_reason(workload, max_latency_s, search);
      cost.rows.push_back(std::move(row));
      continue;
    }
    auto row = cost_row(workload, i, search.batch, search.prediction,
                        comparison.columns[i].price_per_hour_usd);
    row.limit = search.limit;
    cost.rows.push_back(std::move(row));
  }
  sort_and_mark(cost.rows);
  comparison.cost_within = std::move(cost);
}

std::string comparison_to_text(const Comparison& c) {
  std::string out = devices_table(c).str();
  out += "\n";
  out += figures_table(c).str();
  out += legend();
  for (const auto* cost : {&c.cost, &c.cost_within}) {
    if (!*cost) continue;
    out += "\n";
    out += cost_heading(**cost);
    out += cost_table(c, **cost).str();
  }
  return out;
}

std::string comparison_to_markdown(const Comparison& c) {
  std::string out = "## Devices\n\n";
  out += devices_table(c).markdown();
  out += "\n## Measured figures\n\n";
  out += figures_table(c).markdown();
  out += "\n";
  out += legend();
  for (const auto* cost : {&c.cost, &c.cost_within}) {
    if (!*cost) continue;
    out += (*cost)->max_latency_s ? "\n## Cost within the latency target\n\n" : "\n## Cost\n\n";
    out += cost_heading(**cost);
    out += "\n";
    out += cost_table(c, **cost).markdown();
  }
  return out;
}

namespace {

json cost_to_json(const Comparison& c, const CostTable& cost) {
  const bool decoder = cost.workload.decoder;
  json rows = json::array();
  for (const auto& r : cost.rows) {
    json row = {{"device", c.columns[r.column].label}};
    if (!r.error.empty()) row["error"] = r.error;
    if (!r.unmet.empty()) row["unmet"] = r.unmet;
    if (!r.error.empty() || !r.unmet.empty()) {
      rows.push_back(std::move(row));
      continue;
    }
    row["batch"] = r.batch;
    if (decoder) {
      row["time_to_first_token_s"] = r.latency_s;
      row["time_per_output_token_s"] = optional_json(r.decode_s);
      row["requests_per_s"] = r.inferences_per_s;
      row["decode_tokens_per_s"] = optional_json(r.tokens_per_s);
      row["usd_per_million_input_tokens"] = optional_json(r.usd_per_million_input);
      row["usd_per_million_output_tokens"] = optional_json(r.usd_per_million);
      row["datasheet_roofline_time_to_first_token_s"] = optional_json(r.naive_latency_s);
      row["datasheet_roofline_time_per_output_token_s"] = optional_json(r.naive_decode_s);
    } else {
      row["latency_s"] = r.latency_s;
      row["inferences_per_s"] = r.inferences_per_s;
      row["usd_per_million_inferences"] = optional_json(r.usd_per_million);
      row["datasheet_roofline_latency_s"] = optional_json(r.naive_latency_s);
    }
    row["fits"] = r.fits;
    if (r.limit) row["batch_limited_by"] = to_string(*r.limit);
    row["cheapest"] = r.cheapest;
    rows.push_back(std::move(row));
  }
  return {{"model", cost.workload.model},
          {"batch", cost.batch ? json(*cost.batch) : json(nullptr)},
          {"dtype", cost.workload.dtype},
          {"workload", workload_to_json(cost.workload)},
          {"max_latency_s", optional_json(cost.max_latency_s)},
          {"rows", rows}};
}

}  // namespace

json comparison_to_json(const Comparison& c) {
  json columns = json::array();
  for (const auto& col : c.columns) {
    columns.push_back({{"label", col.label},
                       {"machine", col.machine},
                       {"device", col.device_id},
                       {"kind", col.device_kind},
                       {"name", col.device_name},
                       {"price_per_hour_usd", optional_json(col.price_per_hour_usd)}});
  }
  json rows = json::array();
  for (const auto& row : c.rows) {
    json values = json::array();
    for (std::size_t i = 0; i < row.cells.size(); ++i) {
      values.push_back({{"value", optional_json(row.cells[i].value)},
                        {"datasheet", optional_json(row.cells[i].datasheet)},
                        {"ratio_to_first", optional_json(row.ratio_to_first(i))},
                        {"measured_over_datasheet", optional_json(row.of_datasheet(i))}});
    }
    rows.push_back(
        {{"group", row.group}, {"name", row.name}, {"unit", row.unit}, {"values", values}});
  }
  return {{"columns", columns},
          {"rows", rows},
          {"cost", c.cost ? cost_to_json(c, *c.cost) : json(nullptr)},
          {"cost_within_latency", c.cost_within ? cost_to_json(c, *c.cost_within) : json(nullptr)}};
}

}  // namespace truepeak::report
