// The JSON Schema validator on small schemas: for each keyword, a document that passes and one
// that fails with a message naming the path.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/schema_check.hpp"

namespace truepeak {
namespace {

using nlohmann::json;
using Errors = std::vector<std::string>;

Errors check(const char* doc, const char* schema) {
  return validate_json(json::parse(doc), json::parse(schema));
}

// Exactly one message, containing `part`.
::testing::AssertionResult one_error_with(const Errors& errors, const std::string& part) {
  if (errors.size() == 1 && errors[0].find(part) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  auto result = ::testing::AssertionFailure()
                << errors.size() << " messages, expected one containing \"" << part << "\":";
  for (const std::string& message : errors) {
    result << "\n  " << message;
  }
  return result;
}

TEST(SchemaValidator, TypeNamesEveryJsonType) {
  EXPECT_EQ(check(R"("x")", R"({"type": "string"})"), Errors{});
  EXPECT_EQ(check("null", R"({"type": "null"})"), Errors{});
  EXPECT_EQ(check("true", R"({"type": "boolean"})"), Errors{});
  EXPECT_EQ(check("{}", R"({"type": "object"})"), Errors{});
  EXPECT_EQ(check("[]", R"({"type": "array"})"), Errors{});
  EXPECT_EQ(check("1.5", R"({"type": "number"})"), Errors{});
  EXPECT_EQ(check(R"("1.5")", R"({"type": "number"})"),
            Errors{"(root): expected number, got string"});
  EXPECT_EQ(check("true", R"({"type": "number"})"), Errors{"(root): expected number, got boolean"});
  EXPECT_EQ(check("null", R"({"type": "object"})"), Errors{"(root): expected object, got null"});
}

TEST(SchemaValidator, IntegerIsANumberWithoutFraction) {
  EXPECT_EQ(check("3", R"({"type": "integer"})"), Errors{});
  EXPECT_EQ(check("3.0", R"({"type": "integer"})"), Errors{});
  EXPECT_EQ(check("-7", R"({"type": "integer"})"), Errors{});
  EXPECT_EQ(check("3", R"({"type": "number"})"), Errors{});
  EXPECT_EQ(check("3.5", R"({"type": "integer"})"), Errors{"(root): expected integer, got number"});
  EXPECT_EQ(check("1e300", R"({"type": "integer"})"), Errors{});
}

TEST(SchemaValidator, TypeArrayAcceptsAnyListedType) {
  const char* nullable = R"({"type": ["number", "null"]})";
  EXPECT_EQ(check("null", nullable), Errors{});
  EXPECT_EQ(check("2.5", nullable), Errors{});
  EXPECT_EQ(check(R"("N/A")", nullable), Errors{"(root): expected number or null, got string"});
}

TEST(SchemaValidator, EnumAndConst) {
  EXPECT_EQ(check(R"("bf16")", R"({"enum": ["f32", "bf16"]})"), Errors{});
  EXPECT_EQ(check(R"("fp32")", R"({"enum": ["f32", "bf16"]})"),
            Errors{R"((root): "fp32" is not one of ["f32","bf16"])"});
  // Numbers compare by value: 1 and 1.0 are the same JSON number.
  EXPECT_EQ(check("1.0", R"({"enum": [1, 2]})"), Errors{});
  EXPECT_EQ(check(R"({"a": [1]})", R"({"const": {"a": [1]}})"), Errors{});
  EXPECT_EQ(check(R"({"a": [2]})", R"({"const": {"a": [1]}})"),
            Errors{R"((root): expected {"a":[1]}, got {"a":[2]})"});
}

TEST(SchemaValidator, NumericBounds) {
  EXPECT_EQ(check("0", R"({"minimum": 0})"), Errors{});
  EXPECT_TRUE(one_error_with(check("-0.5", R"({"minimum": 0})"), "less than the minimum 0"));
  EXPECT_EQ(check("1e-9", R"({"exclusiveMinimum": 0})"), Errors{});
  EXPECT_EQ(check("0", R"({"exclusiveMinimum": 0})"), Errors{"(root): 0 must be greater than 0"});
  EXPECT_EQ(check("10", R"({"maximum": 10})"), Errors{});
  EXPECT_TRUE(one_error_with(check("11", R"({"maximum": 10})"), "greater than the maximum"));
  EXPECT_EQ(check("9.99", R"({"exclusiveMaximum": 10})"), Errors{});
  EXPECT_TRUE(one_error_with(check("10", R"({"exclusiveMaximum": 10})"), "less than 10"));
  // Bounds apply to numbers only; another type passes them (type is a separate keyword).
  EXPECT_EQ(check(R"("x")", R"({"minimum": 0})"), Errors{});
}

TEST(SchemaValidator, StringLengthAndPattern) {
  EXPECT_EQ(check(R"("ab")", R"({"minLength": 2, "maxLength": 2})"), Errors{});
  EXPECT_TRUE(one_error_with(check(R"("a")", R"({"minLength": 2})"), "at least 2"));
  EXPECT_TRUE(one_error_with(check(R"("abc")", R"({"maxLength": 2})"), "at most 2"));
  // Lengths count code points, not bytes: "µs" is two characters in three bytes.
  EXPECT_EQ(check("\"\xC2\xB5s\"", R"({"maxLength": 2})"), Errors{});
  EXPECT_EQ(check(R"("1.3")", R"({"pattern": "^1\\.[0-9]+$"})"), Errors{});
  EXPECT_EQ(check(R"("2.0")", R"({"pattern": "^1\\.[0-9]+$"})"),
            Errors{R"((root): "2.0" does not match the pattern ^1\.[0-9]+$)"});
  // Patterns are not anchored unless they say so.
  EXPECT_EQ(check(R"("xx-abc-yy")", R"({"pattern": "abc"})"), Errors{});
}

TEST(SchemaValidator, ArrayItemsAndSize) {
  const char* schema =
      R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})";
  EXPECT_EQ(check("[1, 2]", schema), Errors{});
  EXPECT_EQ(check("[1, \"2\", 3]", schema), Errors{"/1: expected integer, got string"});
  EXPECT_EQ(check("[]", schema), Errors{"(root): 0 items, expected at least 1"});
  EXPECT_EQ(check("[1, 2, 3, 4]", schema), Errors{"(root): 4 items, expected at most 3"});
}

TEST(SchemaValidator, PropertiesAndRequired) {
  const char* schema = R"({"type": "object", "required": ["a", "b"],
                           "properties": {"a": {"type": "number"}, "b": {"type": "string"}}})";
  EXPECT_EQ(check(R"({"a": 1, "b": "x"})", schema), Errors{});
  EXPECT_EQ(check(R"({"a": 1})", schema), Errors{"/b: required property is missing"});
  EXPECT_EQ(check(R"({"a": "1", "b": "x"})", schema), Errors{"/a: expected number, got string"});
  // Without additionalProperties, other keys are allowed.
  EXPECT_EQ(check(R"({"a": 1, "b": "x", "c": null})", schema), Errors{});
}

TEST(SchemaValidator, AdditionalPropertiesFalseRejectsUnknownKeys) {
  const char* schema = R"({"properties": {"a": {}}, "additionalProperties": false})";
  EXPECT_EQ(check(R"({"a": 1})", schema), Errors{});
  EXPECT_EQ(check(R"({"a": 1, "aa": 2})", schema),
            Errors{"/aa: unknown property (not allowed here)"});
}

TEST(SchemaValidator, AdditionalPropertiesSchemaChecksMapValues) {
  const char* schema = R"({"additionalProperties": {"type": "string"}})";
  EXPECT_EQ(check(R"({"onednn": "2.6.3"})", schema), Errors{});
  EXPECT_EQ(check(R"({"onednn": 2.6})", schema), Errors{"/onednn: expected string, got number"});
}

TEST(SchemaValidator, PatternPropertiesDecideWhichKeysAreKnown) {
  const char* schema = R"({"patternProperties": {"^(f32|bf16)$": {"type": "number", "minimum": 0}},
                           "additionalProperties": false})";
  EXPECT_EQ(check(R"({"f32": 1e11, "bf16": 2e11})", schema), Errors{});
  EXPECT_TRUE(one_error_with(check(R"({"f32": -1})", schema), "/f32: -1 is less than"));
  EXPECT_EQ(check(R"({"fp32": 1e11})", schema),
            Errors{"/fp32: unknown property (not allowed here)"});
}

TEST(SchemaValidator, PropertyNames) {
  const char* schema = R"({"propertyNames": {"pattern": "^[a-z_]+$"}})";
  EXPECT_EQ(check(R"({"time_s": 1})", schema), Errors{});
  EXPECT_TRUE(
      one_error_with(check(R"({"time s": 1})", schema), "/time s: \"time s\" does not match"));
}

TEST(SchemaValidator, PathsAreJsonPointersWithEscapes) {
  const char* schema = R"({"additionalProperties": {"items": {"type": "number"}}})";
  EXPECT_EQ(check(R"({"a/b~c": [0, "x"]})", schema),
            Errors{"/a~1b~0c/1: expected number, got string"});
}

TEST(SchemaValidator, RefResolvesInsideTheSchema) {
  const char* schema = R"({"$defs": {"rate": {"type": "number", "minimum": 0}},
                           "properties": {"Bps": {"$ref": "#/$defs/rate"}}})";
  EXPECT_EQ(check(R"({"Bps": 1e9})", schema), Errors{});
  EXPECT_TRUE(
      one_error_with(check(R"({"Bps": -1})", schema), "/Bps: -1 is less than the minimum 0"));
  EXPECT_THROW(check("{}", R"({"$ref": "#/$defs/missing"})"), Error);
  EXPECT_THROW(check("{}", R"({"$ref": "other.json#/x"})"), Error);
  EXPECT_THROW(check("{}", R"({"$ref": "#"})"), Error);  // a cycle that never ends
}

TEST(SchemaValidator, RecursiveRefOverNestedData) {
  const char* schema = R"({"$defs": {"node": {"type": "object", "required": ["v"],
                           "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}}}},
                           "$ref": "#/$defs/node"})";
  EXPECT_EQ(check(R"({"v": 1, "next": {"v": 2, "next": {"v": 3}}})", schema), Errors{});
  EXPECT_EQ(check(R"({"v": 1, "next": {"v": 2, "next": {}}})", schema),
            Errors{"/next/next/v: required property is missing"});
  // Depth in the document is not a cycle: 200 nested nodes validate.
  json deep = {{"v", 0}};
  for (int i = 1; i < 200; ++i) deep = {{"v", i}, {"next", deep}};
  EXPECT_EQ(validate_json(deep, json::parse(schema)), Errors{});
}

TEST(SchemaValidator, AnyOf) {
  const char* schema = R"({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]})";
  EXPECT_EQ(check(R"("x")", schema), Errors{});
  EXPECT_EQ(check("4", schema), Errors{});
  const auto errors = check("-4", schema);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("(root): matches none of the anyOf alternatives"), std::string::npos);
  EXPECT_NE(errors[0].find("expected string, got integer"), std::string::npos);
}

TEST(SchemaValidator, OneOfNeedsExactlyOne) {
  const char* schema = R"({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 10}]})";
  EXPECT_EQ(check("3", schema), Errors{});
  EXPECT_EQ(check("10.5", schema), Errors{});
  EXPECT_EQ(check("12", schema),
            Errors{"(root): matches 2 of the oneOf alternatives, expected exactly one"});
  EXPECT_TRUE(one_error_with(check("2.5", schema), "matches none of the oneOf"));
}

TEST(SchemaValidator, AllOfAndNot) {
  EXPECT_EQ(check("5", R"({"allOf": [{"minimum": 1}, {"maximum": 9}]})"), Errors{});
  EXPECT_EQ(check("15", R"({"allOf": [{"minimum": 1}, {"maximum": 9}]})").size(), 1u);
  EXPECT_EQ(check("5", R"({"not": {"type": "string"}})"), Errors{});
  EXPECT_TRUE(one_error_with(check(R"("5")", R"({"not": {"type": "string"}})"), "must not match"));
}

TEST(SchemaValidator, BooleanSchemas) {
  EXPECT_EQ(check("1", "true"), Errors{});
  EXPECT_EQ(check("1", "false"), Errors{"(root): no value is allowed here"});
  EXPECT_EQ(check(R"({"a": 1})", R"({"properties": {"a": false}})"),
            Errors{"/a: no value is allowed here"});
}

TEST(SchemaValidator, ReportsEveryViolation) {
  const char* schema = R"({"type": "object", "required": ["x", "y"],
                           "properties": {"z": {"type": "number"}}})";
  EXPECT_EQ(check(R"({"z": "1"})", schema).size(), 3u);
}

TEST(SchemaValidator, RefusesWhatItDoesNotImplement) {
  // Silently skipping a keyword would make a schema look stricter than it is.
  EXPECT_THROW(check("1", R"({"multipleOf": 2})"), Error);
  EXPECT_THROW(check("[1]", R"({"items": [{"type": "integer"}]})"), Error);
  EXPECT_THROW(check("1", R"({"type": "float"})"), Error);
  EXPECT_THROW(check(R"("x")", R"({"pattern": "("})"), Error);
  // Annotations are fine.
  EXPECT_EQ(check("1", R"({"title": "t", "description": "d", "$comment": "c", "default": 0})"),
            Errors{});
}

}  // namespace
}  // namespace truepeak
