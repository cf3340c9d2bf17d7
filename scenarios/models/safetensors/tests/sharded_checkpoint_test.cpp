// Sharded checkpoints: the index is text anyone can write. Each fault is one SafetensorsError
// line naming the index; a shard never comes from outside the index's directory.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "scenarios/models/safetensors/safetensors_reader.hpp"
#include "scenarios/models/safetensors/safetensors_writer.hpp"
#include "scenarios/models/safetensors/sharded_checkpoint.hpp"
#include "scenarios/models/safetensors/tests/temp_dir.hpp"

namespace oomlab::safetensors {
namespace {

using testing::TempDir;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

HostTensor zeros(const std::string& name, Shape shape) {
  return {name, DType::f32, shape, std::vector<std::uint8_t>(static_cast<std::size_t>(shape_numel(shape)) * 4)};
}

// Two shards: a.safetensors {w1 (2, 2), w2 (3)}, b.safetensors {w3 (4)}: 16 + 12 + 16 = 44 bytes.
struct TwoShards {
  TwoShards() {
    write_safetensors(dir.file("a.safetensors"), {zeros("w1", {2, 2}), zeros("w2", {3})});
    write_safetensors(dir.file("b.safetensors"), {zeros("w3", {4})});
  }
  std::string index(const std::string& json) const {
    const std::string path = dir.file(kIndexFileName);
    write_text(path, json);
    return path;
  }
  TempDir dir;
};

const char* const kGoodIndex = R"({"metadata": {"total_size": 44}, "weight_map": {
  "w1": "a.safetensors", "w2": "a.safetensors", "w3": "b.safetensors"}})";

std::string parse_error(const std::string& json) {
  try {
    parse_sharded_index(json, "/d/model.safetensors.index.json");
  } catch (const SafetensorsError& error) {
    return error.what();
  }
  return "(accepted)";
}

// locate_checkpoint + check_shards on the headers, as a loader does; the first error or "(accepted)".
std::string checkpoint_error(const std::string& path) {
  try {
    const CheckpointFiles files = locate_checkpoint(path);
    std::vector<Header> read;
    for (const std::string& shard : files.paths) read.push_back(read_header(shard));
    std::vector<const Header*> headers;
    for (const Header& header : read) headers.push_back(&header);
    if (files.index) check_shards(*files.index, headers);
  } catch (const SafetensorsError& error) {
    return error.what();
  }
  return "(accepted)";
}

void expect_one_line(const std::string& message, const std::vector<std::string>& parts) {
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_LT(message.size(), 300u) << message;
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

TEST(ShardedIndex, ParsesTheWeightMapAndTotalSize) {
  const ShardedIndex index = parse_sharded_index(kGoodIndex, "/d/model.safetensors.index.json");
  EXPECT_EQ(index.total_size, std::optional<std::uint64_t>(44));
  EXPECT_EQ(index.weight_map.at("w3"), "b.safetensors");
  EXPECT_EQ(index.shards, (std::vector<std::string>{"a.safetensors", "b.safetensors"}));
  EXPECT_EQ(index.shard_path("b.safetensors"), "/d/b.safetensors");
  // total_size is optional; other metadata keys are kept out of the way.
  EXPECT_FALSE(parse_sharded_index(R"({"metadata": {"format": "pt"}, "weight_map": {"w": "a.safetensors"}})", "i")
                   .total_size);
  EXPECT_EQ(parse_sharded_index(R"({"metadata": {"total_size": 44.0}, "weight_map": {"w": "a"}})", "i").total_size,
            std::optional<std::uint64_t>(44));
}

TEST(ShardedIndex, MalformedIndexesAreOneLineNamingTheFault) {
  const std::pair<std::string, std::string> cases[] = {
      {"{not json", "the index is not valid JSON"},
      {"[1, 2]", "the index is array '[1,2]', not a JSON object"},
      {R"({"metadata": {}})", "the index has no weight_map"},
      {R"({"weight_map": ["a.safetensors"]})", "weight_map is array"},
      {R"({"weight_map": {}})", "the weight_map lists no tensors"},
      {R"({"weight_map": {"w": 7}})", "weight_map: tensor 'w' maps to number '7', not a shard file name"},
      {R"({"weight_map": {"w": "a", "w": "b"}})", "weight_map: tensor 'w' is listed twice"},
      {R"({"weight_map": {"w": "a"}, "weight_map": {"w": "a"}})", "key 'weight_map' is given twice"},
      {R"({"metadata": [], "weight_map": {"w": "a"}})", "metadata is array"},
      {R"({"metadata": {"total_size": -1}, "weight_map": {"w": "a"}})",
       "metadata.total_size is number '-1', not a byte count"},
      {R"({"metadata": {"total_size": "44"}, "weight_map": {"w": "a"}})", "metadata.total_size is string"},
      {R"({"metadata": {"total_size": 4.5}, "weight_map": {"w": "a"}})", "not a byte count"},
      {R"({"metadata": {"total_size": 1, "total_size": 2}, "weight_map": {"w": "a"}})",
       "'metadata': key 'total_size' is given twice"},
      {"{\"weight_map\": " + std::string(100000, '[') + std::string(100000, ']') + "}", "nested deeper than 64"},
  };
  for (const auto& [json, part] : cases) {
    expect_one_line(parse_error(json), {"/d/model.safetensors.index.json: ", part});
  }
}

TEST(ShardedIndex, AShardOutsideTheIndexDirectoryIsRefused) {
  for (const char* shard : {"../x.safetensors", "/etc/passwd", "sub/x.safetensors", "..", ".", "",
                            "a\\\\b.safetensors", "a\\u0000b.safetensors", "a\\nb.safetensors"}) {
    const std::string message = parse_error(std::string(R"({"weight_map": {"w": ")") + shard + "\"}}");
    expect_one_line(message,
                    {"weight_map: tensor 'w' is in shard", "which is not a file name: shards sit beside the index"});
  }
}

TEST(ShardedCheckpoint, LocatesAnIndexItsDirectoryOrASingleFile) {
  TwoShards shards;
  const std::string index = shards.index(kGoodIndex);
  for (const std::string& path : {index, shards.dir.path().string()}) {
    const CheckpointFiles files = locate_checkpoint(path);
    EXPECT_EQ(files.label, index);
    ASSERT_TRUE(files.index.has_value());
    EXPECT_EQ(files.paths,
              (std::vector<std::string>{shards.dir.file("a.safetensors"), shards.dir.file("b.safetensors")}));
    EXPECT_EQ(checkpoint_error(path), "(accepted)");
  }
  // A single file, named or found as model.safetensors (which transformers looks for first).
  const CheckpointFiles single = locate_checkpoint(shards.dir.file("a.safetensors"));
  EXPECT_FALSE(single.index);
  EXPECT_EQ(single.paths, std::vector<std::string>{shards.dir.file("a.safetensors")});
  ASSERT_EQ(::symlink(shards.dir.file("a.safetensors").c_str(), shards.dir.file(kSingleFileName).c_str()), 0);
  EXPECT_EQ(locate_checkpoint(shards.dir.path().string()).paths,
            std::vector<std::string>{shards.dir.file(kSingleFileName)});
}

TEST(ShardedCheckpoint, ADirectoryWithoutACheckpointIsNamed) {
  TempDir dir;
  expect_one_line(
      checkpoint_error(dir.path().string()),
      {dir.path().string() + ": a directory with neither model.safetensors nor model.safetensors.index.json"});
}

TEST(ShardedCheckpoint, AMissingShardIsNamed) {
  TwoShards shards;
  const std::string index = shards.index(R"({"weight_map": {"w1": "a.safetensors", "w2": "a.safetensors",
      "w3": "b.safetensors", "w4": "model-00003-of-00003.safetensors"}})");
  expect_one_line(checkpoint_error(index), {index + ": shard 'model-00003-of-00003.safetensors' is missing "
                                                    "(the weight_map puts 1 tensors in it)"});
  // A dangling link is missing too.
  ASSERT_EQ(::symlink(shards.dir.file("gone").c_str(), shards.dir.file("model-00003-of-00003.safetensors").c_str()), 0);
  expect_one_line(checkpoint_error(index), {"is missing"});
}

TEST(ShardedCheckpoint, ShardsThatDisagreeWithTheIndexAreNamed) {
  TwoShards shards;
  const std::pair<std::string, std::string> cases[] = {
      {R"({"weight_map": {"w1": "a.safetensors", "w2": "a.safetensors", "w3": "b.safetensors", "w9": "b.safetensors"}})",
       "tensor 'w9' is mapped to shard 'b.safetensors', which does not hold it"},
      {R"({"weight_map": {"w1": "a.safetensors", "w2": "b.safetensors", "w3": "b.safetensors"}})",
       "tensor 'w2' is mapped to shard 'b.safetensors' but is in shard 'a.safetensors'"},
      {R"({"weight_map": {"w1": "a.safetensors", "w3": "b.safetensors"}})",
       "shard 'a.safetensors' holds tensor 'w2', which the weight_map does not list"},
      {R"({"metadata": {"total_size": 45}, "weight_map": {"w1": "a.safetensors", "w2": "a.safetensors", "w3": "b.safetensors"}})",
       "metadata.total_size is 45 bytes but the shards' 3 tensors hold 44"},
  };
  for (const auto& [json, part] : cases) {
    const std::string index = shards.index(json);
    expect_one_line(checkpoint_error(index), {index + ": " + part});
  }
}

TEST(ShardedCheckpoint, ATensorInTwoShardsIsNamed) {
  TwoShards shards;
  write_safetensors(shards.dir.file("b.safetensors"), {zeros("w3", {4}), zeros("w1", {2, 2})});
  const std::string index = shards.index(kGoodIndex);
  expect_one_line(checkpoint_error(index), {"tensor 'w1' is in both shard 'a.safetensors' and shard 'b.safetensors'"});
}

TEST(ShardedCheckpoint, AMalformedShardIsNamedByTheReader) {
  TwoShards shards;
  write_text(shards.dir.file("b.safetensors"), "short");
  expect_one_line(checkpoint_error(shards.index(kGoodIndex)), {shards.dir.file("b.safetensors") + ": "});
}

TEST(ShardedCheckpoint, AnIndexThatIsNotARegularFileOrTooLargeIsRefused) {
  TwoShards shards;
  const std::string fifo = shards.dir.file("fifo.index.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_one_line(checkpoint_error(fifo), {fifo + ": a FIFO, not a regular file"});
  const std::string large = shards.index(kGoodIndex);
  ASSERT_EQ(::truncate(large.c_str(), static_cast<off_t>(kMaxIndexBytes + 1)), 0);  // sparse: no disk used
  expect_one_line(checkpoint_error(large), {large + ": 100000001 bytes, more than the 100000000 it may have"});
}

}  // namespace
}  // namespace oomlab::safetensors
