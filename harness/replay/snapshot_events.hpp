// What a replay of a snapshot does, in order: the program's requests (alloc, free, empty_cache)
// and, beside them, PyTorch's own decisions (segment_alloc/free/map/unmap, oom) to compare
// against. One list per device with a trace.
//
// Which free to replay. torch records two events per free (c10/cuda/CUDACachingAllocator.cpp):
//   free_requested  in free(), when the program drops the block. allocated_bytes falls here.
//   free_completed  in free_block(), when the block is back in the cache: mergeable with its
//                   neighbours, reusable, releasable by empty_cache. active_bytes falls here.
// Without record_stream the two are adjacent; with it, free() only records events and the block
// stays active_pending_free until process_events() (at the start of a later malloc) or
// synchronize_and_free_events() (OOM retry, empty_cache) finds the other streams done, and
// free_completed comes then. Every later PyTorch decision (a block reused or not, a segment
// freed or not) depends on the cache, so the replay returns a block at free_completed (`free`
// below). Replaying at free_requested would hand memory back earlier than PyTorch could, and
// the segment decisions would diverge at the first cross-stream tensor. free_requested stays in
// the list for the allocated-bytes view.
//
// empty_cache has no trace action of its own: it shows as segment_free/segment_unmap entries
// that no request explains. A run of releases becomes an `empty_cache` request when its frames
// show torch.cuda.empty_cache (recorded with context="all", the default) or when it is not
// followed by the request it would serve (segment_alloc/segment_map/alloc/oom). Without frames,
// empty_cache() called just before an allocation is indistinguishable from that allocation
// releasing cache to retry, and is read as the latter.
//
// Sizes as torch records them: alloc is the size asked for (the replay rounds it, as torch
// did); oom is the rounded size (round_size(orig_size), AllocParams::size()); free_* carry the
// block's requested size; segment_* the segment or mapped range's bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/replay/snapshot.hpp"

namespace oomlab::replay {

enum class ReplayEventKind : std::uint8_t {
  // What the program did: the replay does these.
  alloc,           // request `size` bytes on `stream`; PyTorch returned `addr`
  free_requested,  // the program dropped the block at `addr`
  free,            // the block at `addr` is back in the cache (free_completed): free it here
  empty_cache,     // the program called torch.cuda.empty_cache() (not a trace action)
  // What PyTorch decided: the replay compares its own decisions with these.
  segment_alloc,
  segment_free,
  segment_map,
  segment_unmap,
  oom,       // a request of `size` (rounded) bytes failed; device_free as CUDA reported
  snapshot,  // a _snapshot() call: a phase mark
};
const char* replay_event_name(ReplayEventKind kind);

constexpr std::size_t kNoEvent = static_cast<std::size_t>(-1);

struct ReplayEvent {
  ReplayEventKind kind = ReplayEventKind::alloc;
  StackId frames = kNoFrames;  // beside kind: 64 bytes an event, not 72 (a 40M-entry trace)
  // The entry in device_traces[device]; for empty_cache, the first release it explains.
  std::size_t trace_index = 0;
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  std::int64_t stream = 0;
  std::uint64_t device_free = 0;  // oom
  std::int64_t time_us = 0;
  // free_requested and free: the index in `events` of the block's alloc, or kNoEvent when it
  // was allocated before the trace begins.
  std::size_t alloc_event = kNoEvent;
};
static_assert(sizeof(ReplayEvent) <= 64, "a replay holds one ReplayEvent per trace entry");

struct DeviceEvents {
  int device = 0;
  std::vector<ReplayEvent> events;
  std::size_t trace_entries = 0;  // entries in the device's trace (events skip unknown actions)
  std::size_t allocs = 0;
  std::size_t frees = 0;
  std::size_t ooms = 0;
  std::size_t empty_caches = 0;
  // Signs that the trace starts after the run did (recording began late, or the ring buffer
  // of max_entries dropped the oldest entries): the replay then lacks the state at its start.
  std::size_t frees_before_trace = 0;       // frees of blocks the trace never allocated
  std::size_t allocs_outside_segments = 0;  // allocs in memory no traced segment reserved
  std::size_t releases_before_trace = 0;    // segment_free/unmap of memory never reserved
  std::size_t skipped_entries = 0;          // actions this reader does not know
  bool starts_mid_run() const {
    return frees_before_trace + allocs_outside_segments + releases_before_trace > 0;
  }
};

// One DeviceEvents per device whose trace has entries. Throws SnapshotError when no device has
// an alloc (history off, enabled="state", or skip_actions=["alloc"]: the message says how to
// record), when free_completed was skipped, and when the trace contradicts itself (an alloc at
// an address that is still allocated).
std::vector<DeviceEvents> snapshot_events(const Snapshot& snapshot);

}  // namespace oomlab::replay
