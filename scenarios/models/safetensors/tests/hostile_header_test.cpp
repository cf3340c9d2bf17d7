// Headers made to hurt the parser: deep nesting, duplicate names, huge names and shapes. Each
// must give one short SafetensorsError line naming the file, never a crash or a silent choice.
#include <gtest/gtest.h>

#include <string>

#include "scenarios/models/safetensors/safetensors_format.hpp"

namespace oomlab::safetensors {
namespace {

std::string parse_error(const std::string& json, std::uint64_t data_bytes) {
  try {
    parse_header(json, data_bytes, "model.safetensors");
  } catch (const SafetensorsError& error) {
    return error.what();
  }
  return "(no error)";
}

// One line, short, naming the file: what every error here must look like.
void expect_short_error(const std::string& message, const std::string& part) {
  EXPECT_EQ(message.rfind("model.safetensors: ", 0), 0u) << message.substr(0, 300);
  EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message.substr(0, 300);
  EXPECT_EQ(message.find('\n'), std::string::npos) << message.substr(0, 300);
  EXPECT_LT(message.size(), 400u) << message.substr(0, 300);
}

std::string nested_arrays(std::size_t depth) {
  return std::string(depth, '[') + "1" + std::string(depth, ']');
}

TEST(HostileHeader, HundredThousandNestedArraysInAShapeAreAnErrorNotACrash) {
  // The issue's 200 KB header: building the message used to serialise the shape recursively.
  const std::string json = R"({"w":{"dtype":"F32","shape":)" + nested_arrays(100000) +
                           R"(,"data_offsets":[0,4]}})";
  expect_short_error(parse_error(json, 4), "nested deeper than 64");
}

TEST(HostileHeader, DeepNestingAnywhereIsRefusedAtTheSameDepth) {
  expect_short_error(parse_error(nested_arrays(100000), 0), "nested deeper than 64");
  expect_short_error(parse_error(R"({"__metadata__":)" + nested_arrays(65) + "}", 0), "nested deeper than 64");
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += R"({"a":)";
  expect_short_error(parse_error(objects + "1" + std::string(100000, '}'), 0), "nested deeper than 64");
  // Up to the limit nesting is a plain shape error: the cap is the only new rule.
  const std::string at_limit = R"({"w":{"dtype":"F32","shape":)" + nested_arrays(62) + R"(,"data_offsets":[0,4]}})";
  expect_short_error(parse_error(at_limit, 4), "not a non-negative integer");
}

TEST(HostileHeader, ATensorListedTwiceIsRefusedNamingIt) {
  // nlohmann keeps the last duplicate key: the first 'w' would silently vanish.
  const std::string json = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  expect_short_error(parse_error(json, 8), "tensor 'w' is listed twice");
}

TEST(HostileHeader, AFieldOrMetadataKeyGivenTwiceIsRefused) {
  const std::string field = R"({"w":{"dtype":"F32","shape":[1],"shape":[2],"data_offsets":[0,8]}})";
  expect_short_error(parse_error(field, 8), "tensor 'w': key 'shape' is given twice");
  const std::string metadata = R"({"__metadata__":{"format":"pt","format":"tf"}})";
  expect_short_error(parse_error(metadata, 0), "__metadata__: key 'format' is given twice");
  const std::string two_metadata = R"({"__metadata__":{},"__metadata__":{}})";
  expect_short_error(parse_error(two_metadata, 0), "__metadata__ is listed twice");
}

TEST(HostileHeader, AHugeTensorNameIsCutInTheMessage) {
  const std::string name(100000, 'n');
  const std::string json = R"({")" + name + R"(":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})";
  const std::string message = parse_error(json, 4);
  expect_short_error(message, "tensor '" + std::string(60, 'n') + "...' (100000 chars)");
  expect_short_error(message, "unknown dtype 'F33'");
}

TEST(HostileHeader, ControlCharactersInANameAreEscaped) {
  const std::string json = R"({"evil\nname\u0007":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})";
  expect_short_error(parse_error(json, 8), R"(tensor 'evil\x0aname\x07')");
}

TEST(HostileHeader, AHugeDtypeOrShapeIsCutInTheMessage) {
  const std::string dtype_json =
      R"({"w":{"dtype":")" + std::string(100000, 'F') + R"(","shape":[1],"data_offsets":[0,4]}})";
  expect_short_error(parse_error(dtype_json, 4), "unknown dtype 'FFFF");
  std::string dims;
  for (int i = 0; i < 50000; ++i) dims += "1,";
  const std::string negative = R"({"w":{"dtype":"F32","shape":[)" + dims + R"(-1],"data_offsets":[0,4]}})";
  expect_short_error(parse_error(negative, 4), "dimension 50000 is '-1', not a non-negative integer");
  // A valid shape of 50,001 ones whose offsets do not match: the shape is shown cut.
  const std::string mismatch = R"({"w":{"dtype":"F32","shape":[)" + dims + R"(1],"data_offsets":[0,8]}})";
  expect_short_error(parse_error(mismatch, 8), "hold 8 bytes but f32 (1, 1, 1, 1, 1, 1, 1, 1, ... 50001 dims) needs 4");
}

TEST(HostileHeader, HugeMetadataKeysAndNonStringValuesAreCut) {
  const std::string json = R"({"__metadata__":{")" + std::string(100000, 'k') + R"(":1}})";
  expect_short_error(parse_error(json, 0), "__metadata__ entry 'kkkk");
}

}  // namespace
}  // namespace oomlab::safetensors
