// Internal to the profile reader: a JSON reader whose every access names its JSON path, so that an
// error in a profile says where and why; not part of the profile's public API.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/profile.hpp"

namespace truepeak::profile_detail {

using nlohmann::json;

// Reading: every access names the JSON path, so an error says where and why.
class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& why) const {
    throw InputError(fmt::format("{}: {}: {}", where_, path.empty() ? "/" : path, why));
  }

  const json& field(const json& obj, const std::string& path, const char* key) const {
    if (!obj.is_object()) fail(path, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(path, fmt::format("missing field '{}'", key));
    return *it;
  }
  const json* optional_field(const json& obj, const std::string& path, const char* key) const {
    if (!obj.is_object()) fail(path, "expected an object");
    auto it = obj.find(key);
    return (it == obj.end() || it->is_null()) ? nullptr : &*it;
  }

  static std::string type_name(const json& v) { return v.type_name(); }

  double number(const json& obj, const std::string& path, const char* key) const {
    const auto& v = field(obj, path, key);
    if (!v.is_number()) fail(path + "/" + key, fmt::format("expected a number, got {}", type_name(v)));
    return v.get<double>();
  }
  std::optional<double> optional_number(const json& obj, const std::string& path, const char* key) const {
    const auto* v = optional_field(obj, path, key);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail(path + "/" + key, fmt::format("expected a number or null, got {}", type_name(*v)));
    return v->get<double>();
  }
  std::int64_t integer(const json& obj, const std::string& path, const char* key) const {
    const auto& v = field(obj, path, key);
    // A float is taken where it holds a whole number that a 64-bit integer can hold; converting
    // one outside that range is undefined, so it is refused before the conversion.
    constexpr double kLimit = 9.2e18;
    const bool whole_float = v.is_number_float() && std::isfinite(v.get<double>()) &&
                             std::abs(v.get<double>()) < kLimit && std::trunc(v.get<double>()) == v.get<double>();
    const bool in_range_unsigned = !v.is_number_unsigned() || v.get<std::uint64_t>() <= std::uint64_t(INT64_MAX);
    if (!(v.is_number_integer() && in_range_unsigned) && !whole_float) {
      fail(path + "/" + key, fmt::format("expected an integer, got {}", type_name(v)));
    }
    return v.is_number_integer() ? v.get<std::int64_t>() : std::int64_t(v.get<double>());
  }
  // A size, count or step that must be at least `least` (a shape's extents, strides, groups).
  std::int64_t integer_at_least(const json& obj, const std::string& path, const char* key, std::int64_t least) const {
    const auto value = integer(obj, path, key);
    if (value < least) fail(path + "/" + key, fmt::format("expected at least {}, got {}", least, value));
    return value;
  }
  std::optional<std::int64_t> optional_integer(const json& obj, const std::string& path, const char* key) const {
    const auto* v = optional_field(obj, path, key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) fail(path + "/" + key, fmt::format("expected an integer or null, got {}", type_name(*v)));
    return v->get<std::int64_t>();
  }
  std::string string(const json& obj, const std::string& path, const char* key) const {
    const auto& v = field(obj, path, key);
    if (!v.is_string()) fail(path + "/" + key, fmt::format("expected a string, got {}", type_name(v)));
    return v.get<std::string>();
  }
  std::string optional_string(const json& obj, const std::string& path, const char* key) const {
    const auto* v = optional_field(obj, path, key);
    if (!v) return {};
    if (!v->is_string()) fail(path + "/" + key, fmt::format("expected a string, got {}", type_name(*v)));
    return v->get<std::string>();
  }
  bool boolean(const json& obj, const std::string& path, const char* key) const {
    const auto& v = field(obj, path, key);
    if (!v.is_boolean()) fail(path + "/" + key, fmt::format("expected true or false, got {}", type_name(v)));
    return v.get<bool>();
  }
  // A flag that may be absent or null (false), else true or false.
  bool optional_boolean(const json& obj, const std::string& path, const char* key) const {
    return optional_field(obj, path, key) && boolean(obj, path, key);
  }
  const json& array(const json& obj, const std::string& path, const char* key) const {
    const auto& v = field(obj, path, key);
    if (!v.is_array()) fail(path + "/" + key, fmt::format("expected an array, got {}", type_name(v)));
    return v;
  }
  const json& object(const json& obj, const std::string& path, const char* key) const {
    const auto& v = field(obj, path, key);
    if (!v.is_object()) fail(path + "/" + key, fmt::format("expected an object, got {}", type_name(v)));
    return v;
  }
  std::map<std::string, double> number_map(const json& obj, const std::string& path, const char* key) const {
    std::map<std::string, double> out;
    const auto* v = optional_field(obj, path, key);
    if (!v) return out;
    if (!v->is_object()) fail(path + "/" + key, fmt::format("expected an object, got {}", type_name(*v)));
    for (const auto& [name, value] : v->items()) {
      if (value.is_null()) continue;
      if (!value.is_number()) {
        fail(path + "/" + key + "/" + name, fmt::format("expected a number, got {}", type_name(value)));
      }
      out[name] = value.get<double>();
    }
    return out;
  }
  DType dtype(const json& obj, const std::string& path) const {
    const auto name = string(obj, path, "dtype");
    const auto d = parse_dtype(name);
    if (!d) fail(path + "/dtype", fmt::format("unknown data type '{}'", name));
    return *d;
  }
  Timing timing(const json& obj, const std::string& path) const {
    Timing t;
    t.time_s = number(obj, path, "time_s");
    t.median_s = number(obj, path, "median_s");
    t.cv = number(obj, path, "cv");
    t.samples = static_cast<int>(integer(obj, path, "samples"));
    if (const auto typical = optional_number(obj, path, "typical_s")) {
      if (!(*typical > 0)) fail(path + "/typical_s", "expected a positive time");
      t.typical_s = *typical;
    }
    return t;
  }

 private:
  std::string where_;
};

}  // namespace truepeak::profile_detail
