// Header parsing: every malformed case gives a SafetensorsError naming the file and the tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "scenarios/models/safetensors/safetensors_format.hpp"

namespace oomlab::safetensors {
namespace {

// A whole file image: the length prefix, the JSON text and `data_bytes` bytes of data.
std::vector<std::uint8_t> file_image(const std::string& json, std::size_t data_bytes,
                                     std::uint64_t length_override = 0) {
  std::vector<std::uint8_t> bytes(8 + json.size() + data_bytes, 0x5a);
  const std::uint64_t length = length_override ? length_override : json.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<std::uint8_t>(length >> (8 * i));
  std::memcpy(bytes.data() + 8, json.data(), json.size());
  return bytes;
}

std::string parse_error(const std::vector<std::uint8_t>& image) {
  try {
    parse_file_image(image.data(), image.size(), "model.safetensors");
  } catch (const SafetensorsError& error) {
    return error.what();
  }
  return "(no error)";
}

void expect_error(const std::vector<std::uint8_t>& image, const std::vector<std::string>& parts) {
  const std::string message = parse_error(image);
  EXPECT_EQ(message.rfind("model.safetensors: ", 0), 0u) << message;
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

// The JSON header of one tensor, its fields as they stand in the file ("F32", "[2,3]", "[0,24]").
std::string one_tensor(const std::string& name, const std::string& dtype, const std::string& shape,
                       const std::string& offsets) {
  return R"({")" + name + R"(":{"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" + offsets +
         "}}";
}

const char* const kTwoTensors =
    R"({"__metadata__":{"format":"pt"},)"
    R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
    R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]}})";

TEST(SafetensorsHeader, ParsesTensorsInOffsetOrderAndMetadata) {
  const Header header = parse_file_image(file_image(kTwoTensors, 32).data(), 8 + std::strlen(kTwoTensors) + 32, "f");
  ASSERT_EQ(header.tensors.size(), 2u);
  EXPECT_EQ(header.tensors[0].name, "a");
  EXPECT_EQ(header.tensors[0].dtype, DType::f32);
  EXPECT_EQ(header.tensors[0].shape, (Shape{2, 3}));
  EXPECT_EQ(header.tensors[1].name, "b");
  EXPECT_EQ(header.tensors[1].dtype, DType::bf16);
  EXPECT_EQ(header.tensors[1].begin, 24u);
  EXPECT_EQ(header.metadata.at("format"), "pt");
  EXPECT_EQ(header.data_start(), 8 + std::strlen(kTwoTensors));
  ASSERT_NE(header.find("b"), nullptr);
  EXPECT_EQ(header.find("c"), nullptr);
}

TEST(SafetensorsHeader, ScalarAndEmptyTensorsAreValid) {
  const std::string json =
      R"({"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]},"e":{"dtype":"F32","shape":[0,5],"data_offsets":[8,8]}})";
  const Header header = parse_file_image(file_image(json, 8).data(), 8 + json.size() + 8, "f");
  EXPECT_EQ(header.find("s")->numel(), 1);
  EXPECT_EQ(header.find("e")->bytes(), 0u);
}

TEST(SafetensorsHeader, TruncatedBeforeTheLengthPrefix) {
  expect_error(std::vector<std::uint8_t>{1, 2, 3}, {"truncated", "3 bytes"});
  expect_error(std::vector<std::uint8_t>{}, {"truncated"});
}

TEST(SafetensorsHeader, HeaderLengthBeyondTheFile) {
  expect_error(file_image("{}", 0, 4096), {"header length 4096", "beyond the end"});
}

TEST(SafetensorsHeader, HeaderLengthOverTheFormatLimit) {
  expect_error(file_image("{}", 0, std::uint64_t{1} << 40), {"exceeds the format's limit"});
}

TEST(SafetensorsHeader, InvalidJson) {
  expect_error(file_image(R"({"a":{"dtype":"F32",)", 0), {"not valid JSON"});
  expect_error(file_image("[1,2]", 0), {"must be a JSON object"});
}

TEST(SafetensorsHeader, OverlappingOffsetsNameBothTensors) {
  const std::string json =
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})";
  expect_error(file_image(json, 24), {"tensor 'b'", "overlap tensor 'a'"});
}

TEST(SafetensorsHeader, OffsetsPastTheDataSection) {
  expect_error(file_image(one_tensor("w", "F32", "[4]", "[0,16]"), 12),
               {"tensor 'w'", "reach past the data section (12 bytes"});
}

TEST(SafetensorsHeader, OffsetsEndingBeforeTheyBegin) {
  expect_error(file_image(one_tensor("w", "F32", "[0]", "[16,0]"), 16), {"tensor 'w'", "end before they begin"});
}

TEST(SafetensorsHeader, HoleBetweenTensors) {
  const std::string json =
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  expect_error(file_image(json, 12), {"tensor 'b'", "belong to no tensor"});
}

TEST(SafetensorsHeader, TrailingBytesNoTensorCovers) {
  expect_error(file_image(one_tensor("a", "F32", "[1]", "[0,4]"), 10), {"covers 4 bytes of a 10-byte data section"});
}

TEST(SafetensorsHeader, UnknownDtype) {
  expect_error(file_image(one_tensor("w", "F33", "[1]", "[0,4]"), 4), {"tensor 'w'", "unknown dtype 'F33'"});
}

TEST(SafetensorsHeader, KnownButUnsupportedDtype) {
  expect_error(file_image(one_tensor("w", "F64", "[1]", "[0,8]"), 8), {"tensor 'w'", "F64 is not supported"});
}

TEST(SafetensorsHeader, ShapeAndSizeMismatch) {
  expect_error(file_image(one_tensor("lm_head.weight", "F32", "[2,3]", "[0,12]"), 12),
               {"tensor 'lm_head.weight'", "hold 12 bytes", "f32 (2, 3) needs 24"});
}

TEST(SafetensorsHeader, MalformedFieldsNameTheTensor) {
  expect_error(file_image(R"({"w":{"dtype":"F32","shape":[1]}})", 0), {"tensor 'w'", "missing 'data_offsets'"});
  expect_error(file_image(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", 0),
               {"tensor 'w'", "non-negative integer"});
  expect_error(file_image(R"({"w":{"dtype":"F32","shape":"3","data_offsets":[0,0]}})", 0),
               {"tensor 'w'", "shape must be an array"});
  expect_error(file_image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 0),
               {"tensor 'w'", "data_offsets must be [begin, end]"});
  expect_error(file_image(R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", 4),
               {"tensor 'w'", "dtype must be a string"});
  expect_error(file_image(R"({"w":[1,2]})", 0), {"tensor 'w'", "entry must be an object"});
  expect_error(file_image(R"({"__metadata__":{"k":1}})", 0), {"__metadata__ entry 'k'"});
}

TEST(SafetensorsHeader, HugeShapesAreRejectedNotOverflowed) {
  const std::string json =
      R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})";
  expect_error(file_image(json, 0), {"tensor 'w'", "too many elements"});
}

TEST(SafetensorsHeader, SerializedHeaderParsesBackAndIsPaddedTo8Bytes) {
  std::vector<TensorEntry> tensors = assign_offsets({
      {"x", DType::f16, {3}, 0, 0},
      {"y\"quoted", DType::i32, {2, 2}, 0, 0},
  });
  const std::string json = serialize_header(tensors, {{"k", "v"}});
  EXPECT_EQ(json.size() % 8, 0u);
  const Header header = parse_header(json, 6 + 16, "f");
  ASSERT_EQ(header.tensors.size(), 2u);
  EXPECT_EQ(header.tensors[0].name, "x");
  EXPECT_EQ(header.tensors[1].name, "y\"quoted");
  EXPECT_EQ(header.tensors[1].begin, 6u);
  EXPECT_EQ(header.metadata.at("k"), "v");
}

}  // namespace
}  // namespace oomlab::safetensors
