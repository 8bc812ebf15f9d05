#include "report/html_tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "core/units.hpp"
#include "report/svg_chart.hpp"

namespace truepeak::report {
namespace {

// Unit suffixes of the profile's field names, longest first so "_flops_per_s" is not read as "_s".
constexpr std::string_view kUnitSuffixes[] = {"_flops_per_s", "_Bps", "_bytes", "_s"};

std::string_view unit_of(std::string_view name) {
  for (const auto suffix : kUnitSuffixes) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) return suffix;
  }
  return {};
}

bool is_record_list(const nlohmann::json& value) {
  return value.is_array() && !value.empty() &&
         std::all_of(value.begin(), value.end(), [](const auto& e) { return e.is_object(); });
}

std::string value_html(const std::string& name, const nlohmann::json& value);

// A list of records as a table: one column per field, in the order the fields first appear.
std::string records_table(const nlohmann::json& records) {
  std::vector<std::string> columns;
  for (const auto& r : records) {
    for (const auto& [k, v] : r.items()) {
      if (std::find(columns.begin(), columns.end(), k) == columns.end()) columns.push_back(k);
    }
  }
  std::string out = "<table class=\"records\"><tr>";
  for (const auto& c : columns) out += "<th>" + xml_escape(readable_key(c)) + "</th>";
  out += "</tr>";
  for (const auto& r : records) {
    out += "<tr>";
    for (const auto& c : columns)
      out += "<td>" + (r.contains(c) ? value_html(c, r.at(c)) : std::string("-")) + "</td>";
    out += "</tr>";
  }
  return out + "</table>";
}

std::string value_html(const std::string& name, const nlohmann::json& value) {
  if (is_record_list(value)) return records_table(value);
  if (value.is_object() && !value.empty()) return key_value_table(json_rows(value));
  return xml_escape(readable_value(name, value));
}

void add_rows(const nlohmann::json& object, const std::string& prefix,
              std::vector<KeyValueRow>& rows) {
  for (const auto& [k, v] : object.items()) {
    const auto key = prefix.empty() ? readable_key(k) : prefix + " › " + readable_key(k);
    if (v.is_object() && !v.empty()) {
      add_rows(v, key, rows);
    } else {
      rows.push_back({key, value_html(k, v)});
    }
  }
}

}  // namespace

std::string readable_key(const std::string& name) {
  std::string out = name.substr(0, name.size() - unit_of(name).size());
  std::replace(out.begin(), out.end(), '_', ' ');
  return out;
}

std::string readable_value(const std::string& name, const nlohmann::json& value) {
  if (value.is_null()) return "-";
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number()) {
    const double v = value.get<double>();
    const auto unit = unit_of(name);
    if (unit == "_flops_per_s") return format_flops_per_s(v);
    if (unit == "_Bps") return format_Bps(v);
    if (unit == "_bytes") return format_bytes(v);
    if (unit == "_s") return v == 0 ? "0 s" : format_time_s(v);
    if (value.is_number_integer()) return fmt::format("{}", value.get<std::int64_t>());
    return fmt::format("{:.4g}", v);
  }
  if (value.is_array()) {
    std::string out;
    for (const auto& e : value) out += (out.empty() ? "" : ", ") + readable_value(name, e);
    return out.empty() ? "-" : out;
  }
  if (value.empty()) return "-";
  // An object: its fields on one line, as "key value" pairs.
  std::string out;
  for (const auto& [k, v] : value.items())
    out += (out.empty() ? "" : ", ") + readable_key(k) + " " + readable_value(k, v);
  return out;
}

std::vector<KeyValueRow> json_rows(const nlohmann::json& value) {
  std::vector<KeyValueRow> rows;
  if (value.is_object()) {
    add_rows(value, "", rows);
  } else if (!value.is_null()) {
    rows.push_back({"value", value_html("", value)});
  }
  return rows;
}

std::string key_value_table(const std::vector<KeyValueRow>& rows) {
  if (rows.empty()) return {};
  std::string out = "<table class=\"kv\">\n";
  for (const auto& r : rows) {
    if (r.heading) {
      out += "<tr><th colspan=\"2\">" + xml_escape(r.key) + "</th></tr>\n";
    } else {
      out += "<tr><td>" + xml_escape(r.key) + "</td><td>" + r.html + "</td></tr>\n";
    }
  }
  return out + "</table>\n";
}

std::string device_details_table(const Device& device) {
  std::vector<KeyValueRow> rows = {
      {"kind", xml_escape(device.kind)},
      {"name", xml_escape(device.name)},
      {"memory", device.memory_bytes
                     ? xml_escape(format_bytes(static_cast<double>(*device.memory_bytes)))
                     : "-"},
      {"datasheet source",
       device.datasheet.source.empty() ? "-" : xml_escape(device.datasheet.source)},
  };
  auto section = [&](const std::string& heading, const nlohmann::json& value) {
    auto more = json_rows(value);
    if (more.empty()) return;
    rows.push_back({heading, {}, true});
    rows.insert(rows.end(), more.begin(), more.end());
  };
  section("libraries", device.libraries);
  section("conditions", device.conditions);
  return key_value_table(rows);
}

}  // namespace truepeak::report
