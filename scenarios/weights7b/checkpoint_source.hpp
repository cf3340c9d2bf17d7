// Where a load's tensors come from: a mapped safetensors file (cuda, host), or only a layout
// with no bytes behind it (dry: the 7B plan is a header's worth of shapes, so a dry run at full
// scale never reads or writes 27 GB yet makes the same allocations in the same order).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "scenarios/models/safetensors/safetensors_reader.hpp"

namespace oomlab::scenarios::weights7b {

using safetensors::TensorEntry;

class CheckpointSource {
 public:
  // Maps the file (throws SafetensorsError naming it when malformed).
  static CheckpointSource open(const std::string& path);
  // The file's header only, no mapping: tensors() works, data() is nullptr.
  static CheckpointSource header_only(const std::string& path);
  // A layout (offsets assigned) with no file at all.
  static CheckpointSource plan(std::string label, std::vector<TensorEntry> layout);

  const std::vector<TensorEntry>& tensors() const { return tensors_; }
  std::uint64_t data_bytes() const;
  bool has_data() const { return file_ != nullptr; }
  // The tensor's bytes inside the mapping; nullptr without data.
  const std::uint8_t* data(const TensorEntry& entry) const;
  const safetensors::SafetensorsFile* file() const { return file_.get(); }
  const std::string& label() const { return label_; }  // the path, or "plan llama-7b f32"
  // The one dtype every tensor has; throws std::invalid_argument naming the first that differs.
  DType uniform_dtype() const;

 private:
  std::shared_ptr<const safetensors::SafetensorsFile> file_;
  std::vector<TensorEntry> tensors_;
  std::string label_;
};

}  // namespace oomlab::scenarios::weights7b
