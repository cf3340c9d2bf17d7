// Test helper: a checkpoint rewritten as Hugging Face shards it — model-0000N-of-0000M.safetensors
// files beside model.safetensors.index.json — with the repo's safetensors writer.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/models/safetensors/safetensors_reader.hpp"
#include "scenarios/models/safetensors/safetensors_writer.hpp"
#include "scenarios/models/safetensors/sharded_checkpoint.hpp"

namespace oomlab::scenarios::testing {

struct ShardingOptions {
  int shards = 3;  // at most: no shard is left empty
  // Within a shard, tensors by name as safetensors' Python writer orders them (else file order).
  bool by_name = true;
  // Tensors added to the first shard (e.g. rotary tables), listed in the index like the others.
  std::vector<safetensors::HostTensor> extra;
  // Edits the index JSON before it is written (malformed-index tests).
  std::function<void(nlohmann::json&)> edit_index;
};

inline std::string shard_name(int shard, int shards) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", shard, shards);
  return name;
}

// Writes `single`'s tensors, in its file order, into at most `options.shards` shards of about
// equal bytes in `dir`, and the index; returns the index's path.
inline std::string write_sharded_copy(const std::string& single, const std::string& dir,
                                      const ShardingOptions& options = {}) {
  const safetensors::SafetensorsFile file(single);
  std::map<std::string, const safetensors::HostTensor*> extra;
  for (const auto& tensor : options.extra) extra.emplace(tensor.name, &tensor);
  std::vector<std::vector<safetensors::TensorEntry>> shards(static_cast<std::size_t>(options.shards));
  for (const auto& tensor : options.extra) shards[0].push_back({tensor.name, tensor.dtype, tensor.shape, 0, 0});
  const std::uint64_t per_shard = file.header().data_bytes / static_cast<std::uint64_t>(options.shards) + 1;
  for (const safetensors::TensorEntry& entry : file.header().tensors) {
    shards[std::min<std::size_t>(entry.begin / per_shard, shards.size() - 1)].push_back(entry);
  }
  // A tensor larger than a shard's share leaves the next one empty: no file for it.
  shards.erase(std::remove_if(shards.begin(), shards.end(), [](const auto& shard) { return shard.empty(); }),
               shards.end());
  nlohmann::json index;
  std::uint64_t total = 0;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    if (options.by_name) {
      std::sort(shards[s].begin(), shards[s].end(),
                [](const safetensors::TensorEntry& a, const safetensors::TensorEntry& b) { return a.name < b.name; });
    }
    const std::string name = shard_name(static_cast<int>(s) + 1, static_cast<int>(shards.size()));
    for (const auto& entry : shards[s]) {
      index["weight_map"][entry.name] = name;
      total += static_cast<std::uint64_t>(entry.numel()) * dtype_size(entry.dtype);
    }
    safetensors::write_safetensors(
        dir + "/" + name, shards[s], {{"format", "pt"}},
        [&](const safetensors::TensorEntry& entry, std::uint64_t offset, std::uint8_t* dst, std::size_t bytes) {
          const auto it = extra.find(entry.name);
          const std::uint8_t* src = it != extra.end() ? it->second->bytes.data() : file.tensor(entry.name).data;
          std::memcpy(dst, src + offset, bytes);
        });
  }
  index["metadata"]["total_size"] = total;
  if (options.edit_index) options.edit_index(index);
  const std::string path = dir + "/" + safetensors::kIndexFileName;
  std::ofstream(path) << index.dump(2);
  return path;
}

}  // namespace oomlab::scenarios::testing
