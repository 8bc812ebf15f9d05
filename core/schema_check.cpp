// A validator for the JSON Schema subset the profile schema uses (see schema_check.hpp). It is a
// direct reading of the draft 2020-12 validation vocabulary for those keywords; anything outside
// the subset is refused with an Error instead of being ignored.
#include "core/schema_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <set>
#include <string_view>

// GCC 12 reports false -Wmaybe-uninitialized inside libstdc++'s <regex> when optimising with
// sanitizers, a known false positive about the library's code, not ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"

namespace truepeak {
namespace {

using nlohmann::json;

// Ignored annotations, and $defs, whose schemas are only reached through $ref.
const std::set<std::string_view>& annotation_keywords() {
  static const std::set<std::string_view> names = {"$schema", "$id",         "$defs",   "$comment",
                                                   "title",   "description", "default", "examples"};
  return names;
}

const std::set<std::string_view>& supported_keywords() {
  // clang-format off
  static const std::set<std::string_view> names = {
      "$ref", "type", "enum", "const",
      "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
      "minLength", "maxLength", "pattern",
      "items", "minItems", "maxItems",
      "required", "properties", "patternProperties", "additionalProperties", "propertyNames",
      "allOf", "anyOf", "oneOf", "not"};
  // clang-format on
  return names;
}

// Schemas applied to one value through $ref and combinators, nested this deep, are a cycle that
// never moves into the document ({"$ref": "#"}). Moving to a child value resets the count, so
// deep documents under recursive schemas are fine.
constexpr int kMaxDepth = 64;
// Values quoted in messages are cut here, so one message stays one readable line.
constexpr std::size_t kMaxQuoted = 60;
// Per failed alternative of anyOf/oneOf, this many of its messages are quoted.
constexpr std::size_t kMaxNested = 2;

std::string display_path(const std::string& pointer) {
  return pointer.empty() ? "(root)" : pointer;
}

// One reference token of a JSON pointer (RFC 6901): "~" and "/" are escaped.
std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string quote_value(const json& value) {
  std::string text = value.dump();
  if (text.size() > kMaxQuoted) {
    text = text.substr(0, kMaxQuoted - 3) + "...";
  }
  return text;
}

bool is_integral(const json& value) {
  if (value.is_number_integer()) {
    return true;
  }
  if (!value.is_number_float()) {
    return false;
  }
  const double x = value.get<double>();
  return std::isfinite(x) && std::floor(x) == x;
}

// The JSON type of a value, for messages: "integer" for integer literals, "number" otherwise.
std::string_view type_of(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    default:
      return "unknown";
  }
}

bool has_type(const json& value, const std::string& name) {
  if (name == "null") return value.is_null();
  if (name == "boolean") return value.is_boolean();
  if (name == "object") return value.is_object();
  if (name == "array") return value.is_array();
  if (name == "string") return value.is_string();
  if (name == "number") return value.is_number();
  if (name == "integer") return is_integral(value);
  throw Error(fmt::format("JSON Schema: unknown type name \"{}\"", name));
}

// Length in Unicode code points, as the standard counts it: continuation bytes are not counted.
std::size_t code_points(const std::string& text) {
  std::size_t n = 0;
  for (unsigned char c : text) {
    n += (c & 0xC0u) != 0x80u ? 1 : 0;
  }
  return n;
}

double number_keyword(const json& schema, const char* keyword) {
  const json& value = schema.at(keyword);
  if (!value.is_number()) {
    throw Error(
        fmt::format("JSON Schema: \"{}\" must be a number, got {}", keyword, quote_value(value)));
  }
  return value.get<double>();
}

std::size_t count_keyword(const json& schema, const char* keyword) {
  const json& value = schema.at(keyword);
  if (!is_integral(value) || value.get<double>() < 0) {
    throw Error(fmt::format("JSON Schema: \"{}\" must be a non-negative integer, got {}", keyword,
                            quote_value(value)));
  }
  return static_cast<std::size_t>(value.get<double>());
}

const json& array_keyword(const json& schema, const char* keyword) {
  const json& value = schema.at(keyword);
  if (!value.is_array() || value.empty()) {
    throw Error(fmt::format("JSON Schema: \"{}\" must be a non-empty array", keyword));
  }
  return value;
}

class Validator {
 public:
  explicit Validator(const json& root) : root_(root) {}

  // `depth` counts the schemas applied to this one value so far (see kMaxDepth).
  void check(const json& doc, const json& schema, const std::string& path, int depth,
             std::vector<std::string>& errors) {
    if (depth > kMaxDepth) {
      throw Error(fmt::format("JSON Schema: $ref nesting deeper than {} at {} (a cycle?)",
                              kMaxDepth, display_path(path)));
    }
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) {
        errors.push_back(fmt::format("{}: no value is allowed here", display_path(path)));
      }
      return;
    }
    if (!schema.is_object()) {
      throw Error(fmt::format("JSON Schema: a schema must be an object or a boolean, got {}",
                              quote_value(schema)));
    }
    for (const auto& [keyword, value] : schema.items()) {
      if (!supported_keywords().contains(keyword) && !annotation_keywords().contains(keyword)) {
        throw Error(fmt::format("JSON Schema: unsupported keyword \"{}\"", keyword));
      }
    }
    const std::string where = display_path(path);

    if (schema.contains("$ref")) {
      check(doc, resolve(schema.at("$ref")), path, depth + 1, errors);
    }
    if (schema.contains("type")) {
      check_type(doc, schema.at("type"), where, errors);
    }
    if (schema.contains("enum")) {
      const json& allowed = schema.at("enum");
      if (!allowed.is_array()) {
        throw Error("JSON Schema: \"enum\" must be an array");
      }
      bool found = false;
      for (const json& option : allowed) {
        found = found || option == doc;
      }
      if (!found) {
        errors.push_back(
            fmt::format("{}: {} is not one of {}", where, quote_value(doc), allowed.dump()));
      }
    }
    if (schema.contains("const") && schema.at("const") != doc) {
      errors.push_back(fmt::format("{}: expected {}, got {}", where,
                                   quote_value(schema.at("const")), quote_value(doc)));
    }
    if (doc.is_number()) {
      check_number(doc.get<double>(), schema, where, errors);
    }
    if (doc.is_string()) {
      check_string(doc.get<std::string>(), schema, where, errors);
    }
    if (doc.is_array()) {
      check_array(doc, schema, path, errors);
    }
    if (doc.is_object()) {
      check_object(doc, schema, path, errors);
    }
    check_combinators(doc, schema, path, depth, errors);
  }

 private:
  const json& resolve(const json& ref) {
    if (!ref.is_string() || ref.get<std::string>().empty() || ref.get<std::string>()[0] != '#') {
      throw Error(fmt::format("JSON Schema: only local $ref (\"#/...\") is supported, got {}",
                              quote_value(ref)));
    }
    const std::string pointer = ref.get<std::string>().substr(1);
    try {
      return root_.at(json::json_pointer(pointer));
    } catch (const json::exception&) {
      throw Error(fmt::format("JSON Schema: $ref {} points at nothing", quote_value(ref)));
    }
  }

  const std::regex& regex(const std::string& pattern) {
    auto it = regexes_.find(pattern);
    if (it == regexes_.end()) {
      try {
        it = regexes_.emplace(pattern, std::regex(pattern, std::regex::ECMAScript)).first;
      } catch (const std::regex_error& e) {
        throw Error(fmt::format("JSON Schema: bad pattern \"{}\": {}", pattern, e.what()));
      }
    }
    return it->second;
  }

  static void check_type(const json& doc, const json& type, const std::string& where,
                         std::vector<std::string>& errors) {
    std::vector<std::string> names;
    if (type.is_string()) {
      names.push_back(type.get<std::string>());
    } else if (type.is_array() && !type.empty()) {
      for (const json& name : type) {
        if (!name.is_string()) {
          throw Error("JSON Schema: \"type\" entries must be strings");
        }
        names.push_back(name.get<std::string>());
      }
    } else {
      throw Error("JSON Schema: \"type\" must be a string or a non-empty array of strings");
    }
    for (const std::string& name : names) {
      if (has_type(doc, name)) {
        return;
      }
    }
    errors.push_back(
        fmt::format("{}: expected {}, got {}", where, fmt::join(names, " or "), type_of(doc)));
  }

  static void check_number(double x, const json& schema, const std::string& where,
                           std::vector<std::string>& errors) {
    if (schema.contains("minimum") && !(x >= number_keyword(schema, "minimum"))) {
      errors.push_back(fmt::format("{}: {} is less than the minimum {}", where, x,
                                   number_keyword(schema, "minimum")));
    }
    if (schema.contains("maximum") && !(x <= number_keyword(schema, "maximum"))) {
      errors.push_back(fmt::format("{}: {} is greater than the maximum {}", where, x,
                                   number_keyword(schema, "maximum")));
    }
    if (schema.contains("exclusiveMinimum") && !(x > number_keyword(schema, "exclusiveMinimum"))) {
      errors.push_back(fmt::format("{}: {} must be greater than {}", where, x,
                                   number_keyword(schema, "exclusiveMinimum")));
    }
    if (schema.contains("exclusiveMaximum") && !(x < number_keyword(schema, "exclusiveMaximum"))) {
      errors.push_back(fmt::format("{}: {} must be less than {}", where, x,
                                   number_keyword(schema, "exclusiveMaximum")));
    }
  }

  void check_string(const std::string& text, const json& schema, const std::string& where,
                    std::vector<std::string>& errors) {
    const std::size_t length = code_points(text);
    if (schema.contains("minLength") && length < count_keyword(schema, "minLength")) {
      errors.push_back(fmt::format("{}: {} characters, expected at least {}", where, length,
                                   count_keyword(schema, "minLength")));
    }
    if (schema.contains("maxLength") && length > count_keyword(schema, "maxLength")) {
      errors.push_back(fmt::format("{}: {} characters, expected at most {}", where, length,
                                   count_keyword(schema, "maxLength")));
    }
    if (schema.contains("pattern")) {
      const json& pattern = schema.at("pattern");
      if (!pattern.is_string()) {
        throw Error("JSON Schema: \"pattern\" must be a string");
      }
      // The standard's patterns are not anchored: a match anywhere counts.
      if (!std::regex_search(text, regex(pattern.get<std::string>()))) {
        errors.push_back(fmt::format("{}: {} does not match the pattern {}", where,
                                     quote_value(json(text)), pattern.get<std::string>()));
      }
    }
  }

  void check_array(const json& doc, const json& schema, const std::string& path,
                   std::vector<std::string>& errors) {
    const std::string where = display_path(path);
    if (schema.contains("minItems") && doc.size() < count_keyword(schema, "minItems")) {
      errors.push_back(fmt::format("{}: {} items, expected at least {}", where, doc.size(),
                                   count_keyword(schema, "minItems")));
    }
    if (schema.contains("maxItems") && doc.size() > count_keyword(schema, "maxItems")) {
      errors.push_back(fmt::format("{}: {} items, expected at most {}", where, doc.size(),
                                   count_keyword(schema, "maxItems")));
    }
    if (schema.contains("items")) {
      const json& items = schema.at("items");
      if (items.is_array()) {
        throw Error("JSON Schema: array-form \"items\" is draft-07; use one schema (2020-12)");
      }
      for (std::size_t i = 0; i < doc.size(); ++i) {
        check(doc[i], items, fmt::format("{}/{}", path, i), 0, errors);
      }
    }
  }

  void check_object(const json& doc, const json& schema, const std::string& path,
                    std::vector<std::string>& errors) {
    if (schema.contains("required")) {
      const json& required = schema.at("required");
      if (!required.is_array()) {
        throw Error("JSON Schema: \"required\" must be an array of names");
      }
      for (const json& name : required) {
        if (!name.is_string()) {
          throw Error("JSON Schema: \"required\" must be an array of names");
        }
        if (!doc.contains(name.get<std::string>())) {
          errors.push_back(fmt::format("{}/{}: required property is missing", path,
                                       pointer_token(name.get<std::string>())));
        }
      }
    }
    const json empty = json::object();
    const json& properties = schema.contains("properties") ? schema.at("properties") : empty;
    const json& patterns =
        schema.contains("patternProperties") ? schema.at("patternProperties") : empty;
    if (!properties.is_object() || !patterns.is_object()) {
      throw Error("JSON Schema: \"properties\" and \"patternProperties\" must be objects");
    }
    for (const auto& [key, value] : doc.items()) {
      const std::string child = path + "/" + pointer_token(key);
      bool matched = false;
      if (properties.contains(key)) {
        matched = true;
        check(value, properties.at(key), child, 0, errors);
      }
      for (const auto& [pattern, sub_schema] : patterns.items()) {
        if (std::regex_search(key, regex(pattern))) {
          matched = true;
          check(value, sub_schema, child, 0, errors);
        }
      }
      if (!matched && schema.contains("additionalProperties")) {
        const json& additional = schema.at("additionalProperties");
        if (additional.is_boolean() && !additional.get<bool>()) {
          errors.push_back(fmt::format("{}: unknown property (not allowed here)", child));
        } else {
          check(value, additional, child, 0, errors);
        }
      }
      if (schema.contains("propertyNames")) {
        std::vector<std::string> name_errors;
        check(json(key), schema.at("propertyNames"), child, 0, name_errors);
        for (const std::string& message : name_errors) {
          errors.push_back(message + " (property name)");
        }
      }
    }
  }

  void check_combinators(const json& doc, const json& schema, const std::string& path, int depth,
                         std::vector<std::string>& errors) {
    const std::string where = display_path(path);
    if (schema.contains("allOf")) {
      for (const json& sub_schema : array_keyword(schema, "allOf")) {
        check(doc, sub_schema, path, depth + 1, errors);
      }
    }
    for (const char* keyword : {"anyOf", "oneOf"}) {
      if (!schema.contains(keyword)) {
        continue;
      }
      std::size_t matches = 0;
      std::vector<std::string> reasons;
      for (const json& sub_schema : array_keyword(schema, keyword)) {
        std::vector<std::string> sub_errors;
        check(doc, sub_schema, path, depth + 1, sub_errors);
        if (sub_errors.empty()) {
          ++matches;
        } else {
          const std::size_t n = std::min(sub_errors.size(), kMaxNested);
          reasons.push_back(fmt::format(
              "[{}]",
              fmt::join(sub_errors.begin(), sub_errors.begin() + static_cast<long>(n), "; ")));
        }
      }
      if (matches == 0) {
        errors.push_back(fmt::format("{}: matches none of the {} alternatives: {}", where, keyword,
                                     fmt::join(reasons, " ")));
      } else if (std::string_view(keyword) == "oneOf" && matches > 1) {
        errors.push_back(fmt::format(
            "{}: matches {} of the oneOf alternatives, expected exactly one", where, matches));
      }
    }
    if (schema.contains("not")) {
      std::vector<std::string> sub_errors;
      check(doc, schema.at("not"), path, depth + 1, sub_errors);
      if (sub_errors.empty()) {
        errors.push_back(fmt::format("{}: must not match the schema under \"not\"", where));
      }
    }
  }

  const json& root_;
  std::map<std::string, std::regex> regexes_;
};

// NaN and infinity cannot be written as JSON (the writer would turn them into null), so a
// document in memory that holds one is invalid wherever it sits, schema or not.
void check_finite(const json& doc, const std::string& path, std::vector<std::string>& errors) {
  if (doc.is_number_float() && !std::isfinite(doc.get<double>())) {
    errors.push_back(fmt::format("{}: {} is not a finite number", display_path(path), doc.get<double>()));
  } else if (doc.is_array()) {
    for (std::size_t i = 0; i < doc.size(); ++i) check_finite(doc[i], fmt::format("{}/{}", path, i), errors);
  } else if (doc.is_object()) {
    for (const auto& [key, value] : doc.items()) check_finite(value, path + "/" + pointer_token(key), errors);
  }
}

const json& profile_schema() {
  // Parsed once: the text is fixed when the library is built.
  static const json schema = json::parse(profile_schema_text());
  return schema;
}

}  // namespace

std::vector<std::string> validate_json(const nlohmann::json& doc, const nlohmann::json& schema) {
  std::vector<std::string> errors;
  check_finite(doc, "", errors);
  Validator validator(schema);
  validator.check(doc, schema, "", 0, errors);
  return errors;
}

std::vector<std::string> validate_profile_json(const nlohmann::json& doc) {
  return validate_json(doc, profile_schema());
}

std::vector<std::string> validate_runtime_record_json(const nlohmann::json& doc) {
  // The record's definition, with the profile schema's definitions it refers to.
  static const json schema = {{"$defs", profile_schema().at("$defs")}, {"$ref", "#/$defs/runtime_record"}};
  return validate_json(doc, schema);
}

}  // namespace truepeak
