// Checkpoints as Hugging Face saves them: one `model.safetensors`, or shards beside an index,
// `model.safetensors.index.json`:
//
//   {"metadata": {"total_size": 13476839424},
//    "weight_map": {"lm_head.weight": "model-00002-of-00002.safetensors", ...}}
//
// naming the shard that holds each tensor (total_size: the bytes of every tensor). This finds a
// checkpoint's files from what a user names (a file, an index, or a directory holding either)
// and checks the index and the shards' headers against each other; each shard is read by the
// safetensors reader like any file. The index is text anyone can write: a shard name is a file
// name beside the index, never a path ('../x' and '/x' are refused), and every other fault is
// one SafetensorsError line naming the index.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/models/safetensors/safetensors_format.hpp"

namespace oomlab::safetensors {

inline constexpr const char* kIndexFileName = "model.safetensors.index.json";
inline constexpr const char* kSingleFileName = "model.safetensors";
// Like the header's cap: a 70B index is 60 KB.
constexpr std::uint64_t kMaxIndexBytes = kMaxHeaderBytes;

struct ShardedIndex {
  std::string path;                               // the index file
  std::optional<std::uint64_t> total_size;        // metadata.total_size, when given
  std::map<std::string, std::string> weight_map;  // tensor -> shard file name
  std::vector<std::string> shards;                // the shard names, sorted, each once
  std::string shard_path(const std::string& shard) const;  // the shard beside the index
};

// Throws SafetensorsError naming `path`: invalid JSON (nesting capped, no key twice, as for
// headers), no weight_map or an empty one, a shard that is not a plain file name, a
// metadata.total_size that is not a byte count.
ShardedIndex parse_sharded_index(std::string_view json, const std::string& path);
ShardedIndex read_sharded_index(const std::string& path);

struct CheckpointFiles {
  std::string label;                  // what messages name: the file, or the index
  std::optional<ShardedIndex> index;  // set for a sharded checkpoint
  std::vector<std::string> paths;     // the safetensors files: the one, or the shards in index order
};

// The files `path` stands for: an index (a name ending in ".json") and its shards, which must all
// exist; a directory holding model.safetensors or else model.safetensors.index.json (the order
// transformers looks in); otherwise the safetensors file itself. Throws SafetensorsError.
CheckpointFiles locate_checkpoint(const std::string& path);

// Checks the shards' headers (in index.shards order) against the index: every tensor in exactly
// one shard, the one the weight_map names; no tensor the weight_map leaves out; total_size, when
// given, equal to the tensors' bytes. Throws SafetensorsError naming the index and the first fault.
void check_shards(const ShardedIndex& index, const std::vector<const Header*>& shard_headers);

}  // namespace oomlab::safetensors
