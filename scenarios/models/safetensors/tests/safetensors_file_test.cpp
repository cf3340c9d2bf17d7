// The mmap reader and the streamed atomic writer, on real files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness/testing/random_bytes.hpp"
#include "scenarios/models/safetensors/safetensors_reader.hpp"
#include "scenarios/models/safetensors/safetensors_writer.hpp"
#include "scenarios/models/safetensors/tests/temp_dir.hpp"

namespace oomlab::safetensors {
namespace {

using oomlab::testing::random_bytes;

using testing::TempDir;

std::vector<HostTensor> sample_tensors() {
  return {
      {"embed", DType::f32, {5, 7}, random_bytes(5 * 7 * 4, 1)},
      {"norm", DType::bf16, {7}, random_bytes(7 * 2, 2)},
      {"ids", DType::i64, {3}, random_bytes(3 * 8, 3)},
      {"q", DType::i8, {2, 9}, random_bytes(18, 4)},
  };
}

std::string error_of(const std::string& path) {
  try {
    SafetensorsFile file(path);
  } catch (const SafetensorsError& error) {
    return error.what();
  }
  return "(no error)";
}

std::vector<char> file_contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

TEST(SafetensorsFile, RoundTripKeepsEveryByteAndTheMetadata) {
  TempDir dir;
  const std::string path = dir.file("round.safetensors");
  const auto tensors = sample_tensors();
  write_safetensors(path, tensors, {{"format", "pt"}});
  SafetensorsFile file(path);
  EXPECT_EQ(file.header().metadata.at("format"), "pt");
  EXPECT_EQ(file.header().data_start() % 8, 0u);  // the writer pads the header
  ASSERT_EQ(file.header().tensors.size(), tensors.size());
  for (const HostTensor& expected : tensors) {
    const TensorView view = file.tensor(expected.name);
    EXPECT_EQ(view.entry->dtype, expected.dtype) << expected.name;
    EXPECT_EQ(view.entry->shape, expected.shape) << expected.name;
    ASSERT_EQ(view.bytes, expected.bytes.size()) << expected.name;
    EXPECT_EQ(std::vector<std::uint8_t>(view.data, view.data + view.bytes), expected.bytes) << expected.name;
  }
  EXPECT_EQ(file.file_bytes(), std::filesystem::file_size(path));
}

TEST(SafetensorsFile, HeaderOnlyReadMatchesTheMappedHeader) {
  TempDir dir;
  const std::string path = dir.file("h.safetensors");
  write_safetensors(path, sample_tensors());
  const Header header = read_header(path);
  SafetensorsFile file(path);
  ASSERT_EQ(header.tensors.size(), file.header().tensors.size());
  for (std::size_t i = 0; i < header.tensors.size(); ++i) {
    EXPECT_EQ(header.tensors[i].name, file.header().tensors[i].name);
    EXPECT_EQ(header.tensors[i].begin, file.header().tensors[i].begin);
  }
  EXPECT_EQ(header.data_bytes, file.header().data_bytes);
}

TEST(SafetensorsFile, UnknownTensorNameIsAnErrorNamingTheFile) {
  TempDir dir;
  const std::string path = dir.file("n.safetensors");
  write_safetensors(path, sample_tensors());
  SafetensorsFile file(path);
  EXPECT_THROW(
      {
        try {
          file.tensor("nope");
        } catch (const SafetensorsError& e) {
          EXPECT_NE(std::string(e.what()).find(path + ": no tensor 'nope'"), std::string::npos);
          throw;
        }
      },
      SafetensorsError);
}

TEST(SafetensorsFile, MissingFileAndDirectoryAreClearErrors) {
  TempDir dir;
  EXPECT_NE(error_of(dir.file("absent.safetensors")).find("cannot open"), std::string::npos);
  EXPECT_NE(error_of(dir.path().string()).find("not a regular file"), std::string::npos);
  EXPECT_THROW(read_header(dir.file("absent.safetensors")), SafetensorsError);
}

TEST(SafetensorsFile, TruncatedDataNamesTheTensorPastTheEnd) {
  TempDir dir;
  const std::string path = dir.file("cut.safetensors");
  write_safetensors(path, sample_tensors());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 5);
  const std::string message = error_of(path);
  EXPECT_NE(message.find(path + ": tensor 'q'"), std::string::npos) << message;
  EXPECT_NE(message.find("file truncated?"), std::string::npos) << message;
  EXPECT_THROW(read_header(path), SafetensorsError);
}

TEST(SafetensorsFile, EmptyAndShortFilesAreTruncatedNotCrashes) {
  TempDir dir;
  const std::string path = dir.file("empty.safetensors");
  std::ofstream(path).close();
  EXPECT_NE(error_of(path).find("truncated"), std::string::npos);
  std::ofstream(path, std::ios::binary) << "abc";
  EXPECT_NE(error_of(path).find("truncated: 3 bytes"), std::string::npos);
  EXPECT_NE(error_of(path).find(path), std::string::npos);
}

TEST(SafetensorsWriter, StreamsChunksInOrderAcrossTensorBoundaries) {
  TempDir dir;
  const std::string path = dir.file("chunks.safetensors");
  const std::vector<TensorEntry> layout = {{"a", DType::f32, {10}, 0, 0}, {"b", DType::i8, {5}, 0, 0}};
  std::vector<std::pair<std::string, std::uint64_t>> calls;
  write_safetensors(path, layout, {},
                    [&](const TensorEntry& entry, std::uint64_t offset, std::uint8_t* dst, std::size_t n) {
                      calls.emplace_back(entry.name, offset);
                      for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<std::uint8_t>(offset + i + 1);
                    },
                    /*chunk_bytes=*/16);
  const std::vector<std::pair<std::string, std::uint64_t>> expected = {
      {"a", 0}, {"a", 16}, {"a", 32}, {"b", 0}};
  EXPECT_EQ(calls, expected);
  SafetensorsFile file(path);
  EXPECT_EQ(file.tensor("a").data[39], 40);
  EXPECT_EQ(file.tensor("b").data[4], 5);
}

TEST(SafetensorsWriter, FailureMidWriteLeavesTheOldFileAndNoTempFile) {
  TempDir dir;
  const std::string path = dir.file("keep.safetensors");
  write_safetensors(path, sample_tensors());
  const std::vector<char> before = file_contents(path);
  const std::vector<TensorEntry> layout = {{"a", DType::f32, {1024}, 0, 0}};
  EXPECT_THROW(write_safetensors(path, layout, {},
                                 [](const TensorEntry&, std::uint64_t offset, std::uint8_t* dst, std::size_t n) {
                                   if (offset > 0) throw SafetensorsError("disk on fire");
                                   std::fill(dst, dst + n, 1);
                                 },
                                 /*chunk_bytes=*/1024),
               SafetensorsError);
  EXPECT_EQ(file_contents(path), before);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(SafetensorsWriter, UnwritableDirectoryAndBadInputsAreClearErrors) {
  TempDir dir;
  EXPECT_THROW(write_safetensors(dir.file("no/such/dir.safetensors"), sample_tensors()), SafetensorsError);
  std::vector<HostTensor> wrong_size = {{"w", DType::f32, {4}, std::vector<std::uint8_t>(15)}};
  EXPECT_THROW(write_safetensors(dir.file("w.safetensors"), wrong_size), SafetensorsError);
  std::vector<HostTensor> twice = {{"w", DType::i8, {1}, {1}}, {"w", DType::i8, {1}, {2}}};
  EXPECT_THROW(write_safetensors(dir.file("t.safetensors"), twice), SafetensorsError);
}

}  // namespace
}  // namespace oomlab::safetensors
