#include "harness/replay/snapshot.hpp"

namespace oomlab::replay {

const char* block_state_name(BlockState state) {
  switch (state) {
    case BlockState::active_allocated: return "active_allocated";
    case BlockState::active_pending_free: return "active_pending_free";
    case BlockState::inactive: return "inactive";
  }
  return "?";
}

const char* trace_action_name(TraceAction action) {
  switch (action) {
    case TraceAction::alloc: return "alloc";
    case TraceAction::free_requested: return "free_requested";
    case TraceAction::free_completed: return "free_completed";
    case TraceAction::segment_alloc: return "segment_alloc";
    case TraceAction::segment_free: return "segment_free";
    case TraceAction::segment_map: return "segment_map";
    case TraceAction::segment_unmap: return "segment_unmap";
    case TraceAction::snapshot: return "snapshot";
    case TraceAction::oom: return "oom";
    case TraceAction::other: return "other";
  }
  return "?";
}

}  // namespace oomlab::replay
