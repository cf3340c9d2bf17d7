#include "scenarios/weights7b/checkpoint_source.hpp"

#include <stdexcept>

namespace oomlab::scenarios::weights7b {

CheckpointSource CheckpointSource::open(const std::string& path) {
  CheckpointSource source;
  source.file_ = std::make_shared<const safetensors::SafetensorsFile>(path);
  source.tensors_ = source.file_->header().tensors;
  source.label_ = path;
  return source;
}

CheckpointSource CheckpointSource::header_only(const std::string& path) {
  CheckpointSource source;
  source.tensors_ = safetensors::read_header(path).tensors;
  source.label_ = path;
  return source;
}

CheckpointSource CheckpointSource::plan(std::string label, std::vector<TensorEntry> layout) {
  CheckpointSource source;
  source.tensors_ = std::move(layout);
  source.label_ = std::move(label);
  return source;
}

std::uint64_t CheckpointSource::data_bytes() const {
  return tensors_.empty() ? 0 : tensors_.back().end;
}

const std::uint8_t* CheckpointSource::data(const TensorEntry& entry) const {
  return file_ ? file_->tensor(entry).data : nullptr;
}

DType CheckpointSource::uniform_dtype() const {
  if (tensors_.empty()) throw std::invalid_argument(label_ + ": the checkpoint has no tensors");
  const DType dtype = tensors_.front().dtype;
  for (const TensorEntry& entry : tensors_) {
    if (entry.dtype != dtype) {
      throw std::invalid_argument(label_ + ": tensor '" + entry.name + "' is " +
                                  dtype_name(entry.dtype) + " but '" + tensors_.front().name +
                                  "' is " + dtype_name(dtype) + "; this loader needs one dtype");
    }
  }
  return dtype;
}

}  // namespace oomlab::scenarios::weights7b
