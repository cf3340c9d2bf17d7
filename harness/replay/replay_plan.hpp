// What a replay walks: each request of the program (alloc, free at free_completed, empty_cache,
// and the request that failed: oom) with the segment decisions PyTorch made for it. A request's
// decisions are the segment events just before it (malloc records segment_alloc/segment_free
// before its alloc or oom entry); an empty_cache's are the releases just after it
// (snapshot_events puts the call before the releases it explains).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/replay/replay_pools.hpp"
#include "harness/replay/snapshot.hpp"
#include "harness/replay/snapshot_events.hpp"

namespace oomlab::replay {

struct SegmentDecision {
  ReplayEventKind kind = ReplayEventKind::segment_alloc;  // segment_alloc/free/map/unmap
  std::uint64_t size = 0;
  std::uint64_t addr = 0;
  std::size_t event = 0;  // its index in DeviceEvents::events
};

struct ReplayStep {
  std::size_t event = kNoEvent;  // the request; kNoEvent: decisions that no request explains
  std::uint32_t first_decision = 0;
  std::uint32_t decision_count = 0;
};

struct ReplayPlan {
  std::vector<ReplayStep> steps;
  std::vector<SegmentDecision> decisions;
  // PyTorch's reserved bytes from its own segment events: at the trace's start (the snapshot's
  // final segments minus what the trace added; 0 when the whole run is traced), at its peak.
  std::uint64_t pytorch_reserved_at_start = 0;
  std::uint64_t pytorch_peak_reserved = 0;
  std::size_t pytorch_peak_event = 0;
  TracedSegments segments;  // which of PyTorch's segments each block and decision lies in
};

// Throws SnapshotError when PyTorch's reserved bytes would pass any GPU's memory (trace_bytes.hpp).
ReplayPlan plan_replay(const DeviceEvents& device, const Snapshot& snapshot);

bool is_segment_decision(ReplayEventKind kind);
bool is_release(ReplayEventKind kind);  // segment_free or segment_unmap

}  // namespace oomlab::replay
