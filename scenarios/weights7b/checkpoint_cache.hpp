// Finds the checkpoint a weights7b run loads, without ever generating one on dry.
//
//   $OOMLAB_WEIGHTS7B_F32 / $OOMLAB_WEIGHTS7B_BF16: a file to load (any LLaMA-shaped safetensors
//     file of that dtype). On dry only its header is read.
//   otherwise, dry: the preset's layout, no file at all (a full-scale dry run takes milliseconds);
//   otherwise, cuda/host: a generated checkpoint cached in $OOMLAB_WEIGHTS7B_DIR (default
//     <system temp>/oomlab-weights7b), named by preset, dtype and seed, reused while its header
//     says it was made with those. The full 7B f32 file is 27 GB: generate it once.
#pragma once
#include <functional>
#include <string>

#include "harness/device/device.hpp"
#include "scenarios/weights7b/checkpoint_source.hpp"

namespace oomlab::scenarios::weights7b {

constexpr std::uint64_t kCheckpointSeed = 7;

// `note` receives one line when a checkpoint is generated (it can take minutes at full scale).
CheckpointSource checkpoint_for(DeviceKind kind, const std::string& preset, DType dtype,
                                const std::function<void(const std::string&)>& note);

// Where the generated checkpoint for (preset, dtype) lives.
std::string cached_checkpoint_path(const std::string& preset, DType dtype);

}  // namespace oomlab::scenarios::weights7b
