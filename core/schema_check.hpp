// JSON Schema checks: a small validator for the subset of JSON Schema (draft 2020-12) that
// schema/profile.schema.json uses, and the profile schema itself, compiled into the library so
// that readers, tests and tools validate against the same text that ships in the repository.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace truepeak {

// The text of schema/profile.schema.json as it was when the library was built.
const std::string& profile_schema_text();

// Validates `doc` against `schema` and returns one message per violation, each starting with the
// JSON pointer of the offending value, e.g.
//   "/devices/0/gemm/3/flops_per_s: expected number, got string";
// the document root is written "(root)". Empty = valid. A number that is not finite (NaN,
// infinity: a value JSON cannot hold) is a violation wherever it sits.
//
// Supported keywords: type (a name or an array of names; "integer" is any number without a
// fractional part), enum, const, properties, required, additionalProperties (bool or schema),
// patternProperties, propertyNames, items, minItems, maxItems, minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, minLength, maxLength, pattern (ECMAScript, unanchored as the
// standard says), $ref to a JSON pointer inside the same schema ("#/$defs/name"), allOf, anyOf,
// oneOf, not, and boolean schemas. Annotations ($schema, $id, $defs, title, description,
// $comment, default, examples) are ignored. Any other keyword throws Error rather than being
// silently skipped, so a schema never appears to check something it does not.
std::vector<std::string> validate_json(const nlohmann::json& doc, const nlohmann::json& schema);

// validate_json against the built-in profile schema. Every number must also be finite.
std::vector<std::string> validate_profile_json(const nlohmann::json& doc);

// One runtime record (a value of a device's `runtimes`) against the same schema's
// #/$defs/runtime_record, as `calibrate --runtime` checks a probe's output before storing it.
std::vector<std::string> validate_runtime_record_json(const nlohmann::json& doc);

}  // namespace truepeak
