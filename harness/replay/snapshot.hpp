// A PyTorch memory snapshot, typed: what torch.cuda.memory._snapshot() returns and
// _dump_snapshot() pickles. Field names and meanings follow the writer,
// THCPModule_memorySnapshot in torch/csrc/cuda/Module.cpp (torch 2.5+), and the allocator that
// fills it, c10/cuda/CUDACachingAllocator.cpp; keys this reader does not use are ignored, so
// newer torch versions that add keys still read.
//
//   {"segments": [segment], "device_traces": [[trace entry] per device],
//    "allocator_settings": {...}, "external_annotations": [...]}
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/replay/stack_table.hpp"

namespace oomlab::replay {

// A snapshot that cannot be read or replayed. what() is one line: the file (when known), where
// in the snapshot ("device_traces[0][12]") and what is wrong.
class SnapshotError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// segment_pool_id / a private pool: (0, 0) is the default pool; others belong to a CUDA graph
// capture or a torch.cuda.MemPool.
struct PoolId {
  std::uint64_t first = 0;
  std::uint64_t second = 0;
  bool is_default() const { return first == 0 && second == 0; }
};

enum class BlockState : std::uint8_t {
  active_allocated,     // held by a tensor
  active_pending_free,  // freed, but still in use on another stream (record_stream)
  inactive,             // cached, free for reuse
};
const char* block_state_name(BlockState state);

struct Block {
  std::uint64_t address = 0;
  std::uint64_t size = 0;            // bytes the block spans (rounded)
  std::uint64_t requested_size = 0;  // bytes the program asked for; = size when not recorded
  BlockState state = BlockState::inactive;
  StackId frames = kNoFrames;  // where it was allocated
};

enum class SegmentType : std::uint8_t { small, large };  // the pool: <= 1 MiB requests, or larger

// One cudaMalloc (or one expandable segment's mapped range) at the time of the snapshot.
struct Segment {
  int device = 0;
  std::uint64_t address = 0;
  std::uint64_t total_size = 0;      // reserved bytes
  std::uint64_t allocated_size = 0;  // bytes in active_allocated blocks
  std::uint64_t active_size = 0;     // allocated + pending free
  std::uint64_t requested_size = 0;  // what the program asked for in those blocks (0 if absent)
  std::int64_t stream = 0;           // the cudaStream_t as an integer; 0 = the default stream
  SegmentType type = SegmentType::large;
  bool is_expandable = false;
  PoolId pool;
  StackId frames = kNoFrames;  // where the segment was allocated
  std::vector<Block> blocks;   // in address order, tiling the segment
};

// TraceEntry::Action (c10/core/CachingDeviceAllocator.h), plus `other` for names this reader
// does not know (newer torch: e.g. "annotate"), kept so a replay can say what it skipped.
enum class TraceAction : std::uint8_t {
  alloc,           // the program asked for memory: size = bytes asked (unrounded), addr = block
  free_requested,  // the program freed the block: size = its requested size
  free_completed,  // the block is back in the cache (at once, or once record_stream's events end)
  segment_alloc,   // cudaMalloc of a new segment: size = segment bytes
  segment_free,    // cudaFree of a segment (empty_cache, or releasing cache to retry a request)
  segment_map,     // expandable segments: cuMemMap of size bytes at addr
  segment_unmap,   // expandable segments: cuMemUnmap
  snapshot,        // an earlier _snapshot() call: size = active bytes then, addr = 0
  oom,             // a request failed: size = the rounded request; device_free from CUDA
  other,
};
const char* trace_action_name(TraceAction action);

// 48 bytes: a 2 GB snapshot holds some 40M of them.
struct TraceEntry {
  std::uint64_t addr = 0;  // 0 for oom and snapshot
  std::uint64_t size = 0;
  std::int64_t stream = 0;
  std::int64_t time_us = 0;       // microseconds since the epoch; 0 when not recorded
  std::uint64_t device_free = 0;  // oom only
  StackId frames = kNoFrames;
  std::uint16_t other_action = 0;  // action == other: index into Snapshot::other_actions (64 at most)
  TraceAction action = TraceAction::alloc;
};
static_assert(sizeof(TraceEntry) <= 48, "a snapshot holds one TraceEntry per trace entry");

// roundup_power2_divisions for requests from `from_mib` MiB up to twice that (the first interval
// also covers smaller requests, the last, from 32 GiB, everything larger). round_size uses it
// when divisions > 1 and the request exceeds 512 * divisions bytes; else 512-byte rounding.
struct RoundupDivisions {
  std::uint64_t from_mib = 0;
  std::uint64_t divisions = 0;
};

// snapshot["allocator_settings"]: the caching allocator's settings when the snapshot was taken.
struct AllocatorSettings {
  std::string alloc_conf;  // "PYTORCH_CUDA_ALLOC_CONF": the settings string last applied
  // Bytes; nullopt = unlimited (torch writes int64(SIZE_MAX), that is -1).
  std::optional<std::uint64_t> max_split_size;
  double garbage_collection_threshold = 0;
  bool expandable_segments = false;
  std::vector<RoundupDivisions> roundup_power2_divisions;  // by from_mib; empty when not recorded
};

struct Snapshot {
  std::vector<Segment> segments;
  std::vector<std::vector<TraceEntry>> device_traces;   // [device][entry], oldest first
  std::optional<AllocatorSettings> allocator_settings;  // absent in older torch
  StackTable stacks;
  std::vector<std::string> other_actions;
  int pickle_protocol = 0;
};

}  // namespace oomlab::replay
