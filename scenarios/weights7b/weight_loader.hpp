// Three ways to put a checkpoint's weights on the device, side by side.
//
//   load_whole_file_then_cast (broken): the whole file into pageable host memory, one device
//     upload of every byte in the file's dtype, then a bf16 copy of each tensor cast on the
//     device. Both copies are alive at the end: 4 + 2 = 6 bytes per parameter for an f32 file
//     (2 + 2 for bf16 or f16: the state dict and the model both on the device).
//   stream_load (fixed): tensor by tensor, chunk by chunk, from the mmap through a pinned host
//     ring (pinned_stager.hpp); each chunk's copy runs on a copy stream while the compute stream
//     casts (or quantises) the previous one out of a two-slot device staging ring. The device
//     holds the result plus the ring: 2 bytes per parameter + 2 chunks (1 byte + scales for
//     int8). A bf16 file into bf16 weights needs no device ring: its bytes go straight in.
//
// On dry no byte is read or copied, but every allocation is made in the same order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "kernels/core/tensor.hpp"
#include "scenarios/weights7b/checkpoint_source.hpp"
#include "scenarios/weights7b/pinned_stager.hpp"

namespace oomlab::scenarios::weights7b {

enum class WeightFormat {
  bf16,          // every tensor as bf16
  int8_rowwise,  // matrices as int8 with an f32 absmax scale per row; 1-D norms as bf16
};

struct LoadedWeights {
  std::map<std::string, Tensor> tensors;  // by checkpoint name
  std::map<std::string, Tensor> scales;   // int8 matrices only: (rows) f32
  std::size_t bytes() const;              // device bytes of tensors + scales
};

struct LoadStats {
  std::uint64_t file_bytes = 0;          // tensor bytes read from the checkpoint
  std::size_t chunks = 0;                // uploads handed over: chunks of the device ring, or 1 per tensor
                                         // (the broken load, and a bf16 file copied straight in)
  std::size_t device_staging_bytes = 0;  // the device ring (0 when copying straight into weights)
  std::size_t host_staging_bytes = 0;    // the pinned host ring
  // Where a streamed load's wall time goes (seconds). On the loader thread: allocating each
  // weight. On the stager thread (pinned_stager.hpp), overlapping the allocations: making the
  // pinned ring and thread team, copying file bytes into the ring, waiting for a DMA to give a
  // slot back, and at the end waiting for the last DMA and releasing ring and team.
  double allocate_seconds = 0;
  double setup_seconds = 0;
  double host_copy_seconds = 0;
  double slot_wait_seconds = 0;
  double release_seconds = 0;
};


// Broken: needs a checkpoint of one float dtype (throws std::invalid_argument otherwise).
LoadedWeights load_whole_file_then_cast(Device& device, const CheckpointSource& source,
                                        LoadStats& stats);

// Fixed: any f32/bf16/f16 checkpoint. `chunk_bytes` is one slot of the device ring (what a cast
// or quantise kernel reads at once); a row must fit in it (throws std::invalid_argument naming
// the tensor otherwise). `ring` is the pinned host ring (pinned_stager.hpp).
LoadedWeights stream_load(Device& device, const CheckpointSource& source, WeightFormat format,
                          std::size_t chunk_bytes, LoadStats& stats, const RingShape& ring = kDefaultRing);

// What stream_load's device ring takes for this source: 0 when the file already holds bf16 and
// the format is bf16 (chunks are copied straight into the weights), else two chunk slots.
std::size_t device_staging_bytes(const CheckpointSource& source, WeightFormat format,
                                 std::size_t chunk_bytes);

}  // namespace oomlab::scenarios::weights7b
