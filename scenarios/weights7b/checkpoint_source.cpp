#include "scenarios/weights7b/checkpoint_source.hpp"

#include <stdexcept>

#include "harness/memory/user_text.hpp"
#include "scenarios/models/safetensors/sharded_checkpoint.hpp"

namespace oomlab::scenarios::weights7b {

CheckpointSource CheckpointSource::open(const std::string& path) {
  const safetensors::CheckpointFiles files = safetensors::locate_checkpoint(path);
  std::vector<std::shared_ptr<const safetensors::SafetensorsFile>> mapped;
  std::vector<const safetensors::Header*> headers;
  for (const std::string& shard : files.paths) {
    mapped.push_back(std::make_shared<const safetensors::SafetensorsFile>(shard));
    headers.push_back(&mapped.back()->header());
  }
  if (files.index) safetensors::check_shards(*files.index, headers);
  return over_shards(files.label, headers, std::move(mapped));
}

CheckpointSource CheckpointSource::header_only(const std::string& path) {
  const safetensors::CheckpointFiles files = safetensors::locate_checkpoint(path);
  std::vector<safetensors::Header> read;
  for (const std::string& shard : files.paths) read.push_back(safetensors::read_header(shard));
  std::vector<const safetensors::Header*> headers;
  for (const safetensors::Header& header : read) headers.push_back(&header);
  if (files.index) safetensors::check_shards(*files.index, headers);
  return over_shards(files.label, headers, {});
}

CheckpointSource CheckpointSource::plan(std::string label, std::vector<TensorEntry> layout) {
  CheckpointSource source;
  source.tensors_ = std::move(layout);
  source.label_ = std::move(label);
  source.index_names();
  return source;
}

CheckpointSource CheckpointSource::over_shards(
    std::string label, const std::vector<const safetensors::Header*>& headers,
    std::vector<std::shared_ptr<const safetensors::SafetensorsFile>> files) {
  CheckpointSource source;
  for (std::size_t shard = 0; shard < headers.size(); ++shard) {
    for (const TensorEntry& entry : headers[shard]->tensors) {
      source.tensors_.push_back(entry);
      source.shard_of_.push_back(shard);
      source.in_shard_.push_back(entry);
    }
  }
  source.tensors_ = safetensors::assign_offsets(std::move(source.tensors_));
  source.files_ = std::move(files);
  source.shard_count_ = headers.size();
  source.label_ = std::move(label);
  source.index_names();
  return source;
}

void CheckpointSource::index_names() {
  position_.clear();
  for (std::size_t i = 0; i < tensors_.size(); ++i) position_.emplace(tensors_[i].name, i);
}

std::uint64_t CheckpointSource::data_bytes() const {
  return tensors_.empty() ? 0 : tensors_.back().end;
}

const std::uint8_t* CheckpointSource::data(const TensorEntry& entry) const {
  if (files_.empty()) return nullptr;
  const auto it = position_.find(entry.name);
  if (it == position_.end()) {
    throw std::invalid_argument(label_ + ": no tensor " + quote_user_text(entry.name));
  }
  return files_[shard_of_[it->second]]->tensor(in_shard_[it->second]).data;
}

DType CheckpointSource::uniform_dtype() const {
  if (tensors_.empty()) throw std::invalid_argument(label_ + ": the checkpoint has no tensors");
  const DType dtype = tensors_.front().dtype;
  for (const TensorEntry& entry : tensors_) {
    if (entry.dtype != dtype) {
      throw std::invalid_argument(label_ + ": tensor " + quote_user_text(entry.name) + " is " +
                                  dtype_name(entry.dtype) + " but " + quote_user_text(tensors_.front().name) +
                                  " is " + dtype_name(dtype) + "; this loader needs one dtype");
    }
  }
  return dtype;
}

CheckpointSource CheckpointSource::without(const std::function<bool(const TensorEntry&)>& skip) const {
  CheckpointSource kept;
  kept.files_ = files_;
  kept.shard_count_ = shard_count_;
  kept.label_ = label_;
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (skip(tensors_[i])) continue;
    kept.tensors_.push_back(tensors_[i]);
    if (!shard_of_.empty()) {
      kept.shard_of_.push_back(shard_of_[i]);
      kept.in_shard_.push_back(in_shard_[i]);
    }
  }
  kept.tensors_ = safetensors::assign_offsets(std::move(kept.tensors_));
  kept.index_names();
  return kept;
}

void CheckpointSource::drop_page_cache() const {
  for (const auto& file : files_) file->drop_page_cache();
}

}  // namespace oomlab::scenarios::weights7b
