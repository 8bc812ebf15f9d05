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

// "12345", "922.1", "0.512": plain digits, no exponent, about four significant figures.
std::string format_rate(double v) {
  return v >= 1000 ? fmt::format("{:.0f}", v) : fmt::format("{:.4g}", v);
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

TextTable cost_table(const Comparison& c) {
  TextTable t({"device", "latency", "inferences/s", "USD per 1M", "datasheet-roofline latency", ""});
  t.set_left_columns({0, 5});
  for (const auto& r : c.cost->rows) {
    if (!r.error.empty()) {
      t.add_row(
          {c.columns[r.column].label, "-", "-", "-", "-", "cannot estimate: " + r.error});
      continue;
    }
    t.add_row(
        {c.columns[r.column].label, format_time_s(r.latency_s), format_rate(r.inferences_per_s),
         r.usd_per_million ? fmt::format("{:.4g}", *r.usd_per_million) : "- (no price)",
         r.naive_latency_s ? format_time_s(*r.naive_latency_s) : "-",
         r.cheapest ? "<- cheapest" : (r.fits ? "" : "does not fit in memory")});
  }
  return t;
}

std::string legend() {
  return "Ratios: Nx = this device / the first column; (P% ds) = measured / datasheet of the same "
         "device.\n";
}

std::string cost_heading(const CostTable& cost) {
  return fmt::format("Model {} (batch {}, {}), sorted by cost per million inferences:\n",
                     cost.model, cost.batch, cost.dtype);
}

}  // namespace

Comparison compare_profiles(const std::vector<Profile>& profiles,
                            const std::map<std::string, double>& prices) {
  for (const auto& [label, usd] : prices) {
    const bool known = std::any_of(profiles.begin(), profiles.end(),
                                   [&](const auto& p) { return p.machine.label == label; });
    if (!known) {
      std::vector<std::string> labels;
      for (const auto& p : profiles) labels.push_back(p.machine.label);
      throw InputError(
          fmt::format("--price {}={}: no profile has the machine label '{}' (labels: {})", label,
                      usd, label, fmt::join(labels, ", ")));
    }
  }
  Comparison c;
  const auto views = all_devices(profiles);
  for (const auto& v : views) {
    CompareColumn col{v.label,        v.profile->machine.label,
                      v.device->id,   v.device->kind,
                      v.device->name, v.profile->machine.price_per_hour_usd};
    if (auto it = prices.find(col.machine); it != prices.end()) col.price_per_hour_usd = it->second;
    c.columns.push_back(std::move(col));
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
  // A runtime's fixed cost per op: what a model of many small ops pays on top of the library.
  for (const auto& key : runtime_keys(profiles)) {
    row_of("runtime", key + " op", "s", [&](const Device& d) {
      const auto it = d.runtimes.find(key);
      return CompareCell{it == d.runtimes.end() ? std::nullopt : std::optional<double>(it->second.op_s),
                         std::nullopt};
    });
  }
  return c;
}

void add_cost(Comparison& comparison, const std::vector<Profile>& profiles,
              const std::string& model, int batch, const std::string& dtype,
              const Predictor& predict) {
  CostTable cost{model, batch, dtype, {}};
  const auto views = all_devices(profiles);
  for (std::size_t i = 0; i < views.size(); ++i) {
    const auto p = predict(*views[i].profile, *views[i].device);
    CostRow row;
    row.column = i;
    row.latency_s = p.latency_s;
    row.naive_latency_s = p.naive_latency_s;
    row.fits = p.fits;
    row.error = p.error;
    if (!row.error.empty()) {
      cost.rows.push_back(row);
      continue;
    }
    row.inferences_per_s = p.latency_s > 0 ? batch / p.latency_s : 0;
    if (const auto price = comparison.columns[i].price_per_hour_usd; price && p.latency_s > 0) {
      row.usd_per_million = *price / 3600.0 * p.latency_s / batch * 1e6;
    }
    cost.rows.push_back(row);
  }
  auto usable = [](const CostRow& r) {
    return r.error.empty() && r.fits && r.usd_per_million.has_value();
  };
  std::stable_sort(cost.rows.begin(), cost.rows.end(), [&](const CostRow& a, const CostRow& b) {
    if (a.error.empty() != b.error.empty()) return a.error.empty();
    if (usable(a) != usable(b)) return usable(a);
    if (a.usd_per_million.has_value() != b.usd_per_million.has_value())
      return a.usd_per_million.has_value();
    if (a.usd_per_million && *a.usd_per_million != *b.usd_per_million)
      return *a.usd_per_million < *b.usd_per_million;
    return a.latency_s < b.latency_s;
  });
  if (!cost.rows.empty() && usable(cost.rows.front())) cost.rows.front().cheapest = true;
  comparison.cost = std::move(cost);
}

std::string comparison_to_text(const Comparison& c) {
  std::string out = devices_table(c).str();
  out += "\n";
  out += figures_table(c).str();
  out += legend();
  if (c.cost) {
    out += "\n";
    out += cost_heading(*c.cost);
    out += cost_table(c).str();
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
  if (c.cost) {
    out += "\n## Cost\n\n";
    out += cost_heading(*c.cost);
    out += "\n";
    out += cost_table(c).markdown();
  }
  return out;
}

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
  json cost = nullptr;
  if (c.cost) {
    json cost_rows = json::array();
    for (const auto& r : c.cost->rows) {
      if (!r.error.empty()) {
        cost_rows.push_back({{"device", c.columns[r.column].label}, {"error", r.error}});
        continue;
      }
      cost_rows.push_back({{"device", c.columns[r.column].label},
                           {"latency_s", r.latency_s},
                           {"inferences_per_s", r.inferences_per_s},
                           {"fits", r.fits},
                           {"usd_per_million_inferences", optional_json(r.usd_per_million)},
                           {"datasheet_roofline_latency_s", optional_json(r.naive_latency_s)},
                           {"cheapest", r.cheapest}});
    }
    cost = {{"model", c.cost->model},
            {"batch", c.cost->batch},
            {"dtype", c.cost->dtype},
            {"rows", cost_rows}};
  }
  return {{"columns", columns}, {"rows", rows}, {"cost", cost}};
}

std::pair<std::string, double> parse_price(const std::string& text) {
  const auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw InputError(
        fmt::format("--price '{}': expected LABEL=USD_PER_HOUR, e.g. my-box=2.5", text));
  }
  const auto value_text = text.substr(eq + 1);
  std::size_t pos = 0;
  double usd = 0;
  try {
    usd = std::stod(value_text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != value_text.size() || !std::isfinite(usd) || usd < 0) {
    throw InputError(fmt::format(
        "--price '{}': '{}' is not a price in USD per hour (a number >= 0)", text, value_text));
  }
  return {text.substr(0, eq), usd};
}

}  // namespace truepeak::report
