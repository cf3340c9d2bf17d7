// Where a load's tensors come from: a mapped checkpoint (cuda, host) — one safetensors file or
// every shard of a sharded one — or only a layout with no bytes behind it (dry: the 7B plan is a
// header's worth of shapes, so a dry run at full scale never reads or writes 27 GB and still keeps
// the one invariant, docs/architecture.md).
//
// A sharded checkpoint reads like one file: tensors() runs shard after shard (in the index's
// order), each shard's tensors in file order, with offsets into the shards' data sections laid
// end to end. So the loaders stream tensor by tensor across files without knowing there are any.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scenarios/models/safetensors/safetensors_reader.hpp"

namespace oomlab::scenarios::weights7b {

using safetensors::TensorEntry;

class CheckpointSource {
 public:
  // Maps a checkpoint: a .safetensors file, a model.safetensors.index.json with its shards, or a
  // directory holding either (sharded_checkpoint.hpp). Throws SafetensorsError naming the file
  // when anything is malformed or the shards disagree with the index.
  static CheckpointSource open(const std::string& path);
  // The same checks from the headers only, no mapping: tensors() works, data() is nullptr.
  static CheckpointSource header_only(const std::string& path);
  // A layout (offsets assigned) with no file at all.
  static CheckpointSource plan(std::string label, std::vector<TensorEntry> layout);

  const std::vector<TensorEntry>& tensors() const { return tensors_; }
  std::uint64_t data_bytes() const;
  bool has_data() const { return !files_.empty(); }
  // The tensor's bytes inside its shard's mapping; nullptr without data. Throws
  // std::invalid_argument for a tensor this source does not hold.
  const std::uint8_t* data(const TensorEntry& entry) const;
  const std::string& label() const { return label_; }  // the file or index, or "plan llama-7b f32"
  std::size_t shard_count() const { return shard_count_; }
  // The one dtype every tensor has; throws std::invalid_argument naming the first that differs.
  DType uniform_dtype() const;
  // This checkpoint without the tensors `skip` picks (offsets laid end to end again).
  CheckpointSource without(const std::function<bool(const TensorEntry&)>& skip) const;
  // Drops every shard's pages from the page cache (SafetensorsFile::drop_page_cache).
  void drop_page_cache() const;

 private:
  // Builds the one-file view of the shards' headers; `files` is empty for header_only.
  static CheckpointSource over_shards(std::string label, const std::vector<const safetensors::Header*>& headers,
                                      std::vector<std::shared_ptr<const safetensors::SafetensorsFile>> files);
  void index_names();

  std::vector<std::shared_ptr<const safetensors::SafetensorsFile>> files_;  // one per shard, when mapped
  std::vector<TensorEntry> tensors_;
  // Per tensor (same order): its shard and its entry there (offsets inside that shard).
  std::vector<std::size_t> shard_of_;
  std::vector<TensorEntry> in_shard_;
  std::map<std::string, std::size_t> position_;  // tensor name -> index in tensors_
  std::size_t shard_count_ = 0;
  std::string label_;
};

}  // namespace oomlab::scenarios::weights7b
