#include "harness/memory/trace_state.hpp"

#include "harness/memory/trace.hpp"

namespace oomlab::memory {

void TraceState::apply(const TraceEvent& e) {
  switch (e.kind) {
    case EventKind::segment_map: {
      SegmentState& segment = segments_[e.segment];
      segment.mapped += e.bytes;
      segment.stream = e.stream;
      reserved_ += e.bytes;
      break;
    }
    case EventKind::segment_unmap: {
      auto it = segments_.find(e.segment);
      if (it == segments_.end()) break;  // mapped before a state that starts mid-trace
      const std::size_t bytes = e.bytes < it->second.mapped ? e.bytes : it->second.mapped;
      it->second.mapped -= bytes;
      reserved_ -= bytes;
      if (it->second.mapped == 0) segments_.erase(it);
      break;
    }
    case EventKind::alloc:
      blocks_[{e.segment, e.offset}] = BlockState{e.bytes, e.tag, e.site, e.sequence};
      allocated_ += e.bytes;
      break;
    case EventKind::free:
      if (blocks_.erase({e.segment, e.offset}) > 0) allocated_ -= e.bytes;
      break;
    case EventKind::oom:
    case EventKind::empty_cache:
    case EventKind::step: break;
  }
}

}  // namespace oomlab::memory
