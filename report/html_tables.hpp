// The report's key/value tables: a device's libraries, datasheet source and run conditions as
// readable rows instead of JSON. Nested objects become rows named by their path, a list of
// records a small table of its own, a field's unit (the `_s`, `_bytes`, `_Bps` suffix of its
// name) goes into its value.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/profile.hpp"

namespace truepeak::report {

// One row of a key/value table; `html` is the value's cell, already escaped. A heading row
// names the rows that follow and has no value.
struct KeyValueRow {
  std::string key;
  std::string html;
  bool heading = false;
};

// A JSON field's name as a reader says it: the unit suffix dropped, '_' as a space
// ("closing_watch_s" -> "closing watch").
std::string readable_key(const std::string& name);
// A value formatted by the unit its field's name carries: "18.5 s", "4.1 TB/s", "yes"; a list
// joined by commas, an object as "key value" pairs on one line.
std::string readable_value(const std::string& name, const nlohmann::json& value);

// `value`'s fields as rows, depth first; nested objects' rows are named "outer › inner", a list
// of records is one row whose value is a table of them.
std::vector<KeyValueRow> json_rows(const nlohmann::json& value);

// A two-column table (class "kv") of the rows, or an empty string when there are none.
std::string key_value_table(const std::vector<KeyValueRow>& rows);

// The device's description: kind, name, memory, one row per library, how its datasheet was
// derived, then its conditions.
std::string device_details_table(const Device& device);

}  // namespace truepeak::report
