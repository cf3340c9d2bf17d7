// Three ways to put a checkpoint's weights on the device, side by side.
//
//   load_whole_file_then_cast (broken): the whole file into pageable host memory, one device
//     upload of every f32 byte, then a bf16 copy of each tensor cast on the device. Both copies
//     are alive at the end: 4 + 2 = 6 bytes per parameter.
//   stream_load (fixed): tensor by tensor, chunk by chunk, from the mmap (through two pinned host
//     buffers, or straight out of registered windows of the mapping: host_path.hpp); each chunk's copy runs on a copy stream while the compute stream casts (or
//     quantises) the previous one out of a two-slot device staging ring. The device holds the
//     result plus the ring: 2 bytes per parameter + 2 chunks (1 byte + scales for int8).
//
// On dry no byte is read or copied, but every allocation is made in the same order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "kernels/core/tensor.hpp"
#include "scenarios/weights7b/checkpoint_source.hpp"
#include "scenarios/weights7b/host_path.hpp"

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
  std::size_t chunks = 0;                // staging chunks moved (1 per tensor for the broken load)
  std::size_t device_staging_bytes = 0;  // the device ring (0 when copying straight into weights)
  std::size_t host_staging_bytes = 0;    // the pinned host ring
  // Where a streamed load's wall time goes, on the host thread (seconds): allocating each weight,
  // copying chunks from the file into the pinned ring, and waiting for the copy stream to give a
  // ring slot back; setting up the host path (pinned ring, thread team) and releasing it.
  // Whatever is left is launching and the final synchronisation.
  double allocate_seconds = 0;
  double setup_seconds = 0;
  double release_seconds = 0;
  double host_copy_seconds = 0;
  double slot_wait_seconds = 0;  // or, for registered windows, waiting for a registration
  // The host path (host_path.hpp) and, for registered windows, what it held and its workers'
  // time registering and unregistering (in parallel with the copies, not on the loader thread).
  HostPath host_path = HostPath::staged_copy;
  std::size_t registered_bytes = 0;
  double register_seconds = 0;
  double unregister_seconds = 0;
};

// How stream_load gets file bytes to the device. THE line to change when
// scenarios/weights7b/bench/host_path_bench picks another host path (see host_path.hpp).
inline constexpr HostPathConfig kLoaderHostPath{HostPath::staged_copy};

// Broken: needs an all-f32 checkpoint (throws std::invalid_argument naming the tensor otherwise).
LoadedWeights load_whole_file_then_cast(Device& device, const CheckpointSource& source,
                                        LoadStats& stats);

// Fixed: any f32/bf16/f16 checkpoint. `chunk_bytes` is one staging slot (host and device); a
// row must fit in it (throws std::invalid_argument naming the tensor otherwise).
LoadedWeights stream_load(Device& device, const CheckpointSource& source, WeightFormat format,
                          std::size_t chunk_bytes, LoadStats& stats,
                          const HostPathConfig& host_path = kLoaderHostPath);

// What stream_load's device ring takes for this source: 0 when the file already holds bf16 and
// the format is bf16 (chunks are copied straight into the weights), else two chunk slots.
std::size_t device_staging_bytes(const CheckpointSource& source, WeightFormat format,
                                 std::size_t chunk_bytes);

}  // namespace oomlab::scenarios::weights7b
