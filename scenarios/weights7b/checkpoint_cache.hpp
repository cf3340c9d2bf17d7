// Finds the checkpoint a weights7b run loads, without ever generating one on dry.
//
//   $OOMLAB_WEIGHTS7B_F32 / _BF16 / _F16: the user's checkpoint in that dtype: a .safetensors
//     file, a sharded one's model.safetensors.index.json, or a directory holding either. It must
//     be the preset's checkpoint in that dtype, tensor for tensor (checkpoint_match.hpp), else
//     std::invalid_argument; the rotary tables older Hugging Face files hold are skipped. On dry
//     only its headers are read.
//   otherwise, dry: the preset's layout, no file at all (a full-scale dry run takes milliseconds);
//   otherwise, cuda/host: a generated checkpoint cached in $OOMLAB_WEIGHTS7B_DIR (default
//     <system temp>/oomlab-weights7b), named by preset, dtype and seed, reused while its header
//     says it was made with those. The full 7B f32 file is 27 GB: generate it once. A disk
//     without room for it is an error before a byte is written.
#pragma once
#include <functional>
#include <string>

#include "harness/device/device.hpp"
#include "scenarios/weights7b/checkpoint_match.hpp"
#include "scenarios/weights7b/checkpoint_source.hpp"

namespace oomlab::scenarios::weights7b {

constexpr std::uint64_t kCheckpointSeed = 7;

// The variable naming the user's checkpoint of `dtype`, and its value (nullptr when unset).
const char* given_checkpoint_variable(DType dtype);
const char* given_checkpoint_path(DType dtype);

// `note` receives one line when a checkpoint is generated (it can take minutes at full scale)
// and when rotary tables are skipped.
CheckpointSource checkpoint_for(DeviceKind kind, const WantedCheckpoint& wanted,
                                const std::function<void(const std::string&)>& note);

// Where the generated checkpoint for (preset, dtype) lives.
std::string cached_checkpoint_path(const std::string& preset, DType dtype);

}  // namespace oomlab::scenarios::weights7b
