#include "harness/replay/dump_state.hpp"

#include <algorithm>
#include <map>

#include "harness/memory/size.hpp"
#include "harness/replay/allocation_sites_frames.hpp"

namespace oomlab::replay {

bool has_allocation_history(const Snapshot& snapshot) {
  for (const std::vector<TraceEntry>& trace : snapshot.device_traces) {
    for (const TraceEntry& entry : trace) {
      if (entry.action == TraceAction::alloc || entry.action == TraceAction::oom) return true;
    }
  }
  return false;
}

std::vector<DumpState> dump_state(const Snapshot& snapshot) {
  std::map<int, DumpState> states;
  std::map<int, std::map<std::string, DumpSite>> sites;
  for (const Segment& segment : snapshot.segments) {
    DumpState& state = states[segment.device];
    state.device = segment.device;
    ++state.segments;
    if (!segment.pool.is_default()) ++state.private_pool_segments;
    state.reserved = saturating_add(state.reserved, segment.total_size);  // sizes are the file's: never wrap
    for (const Block& block : segment.blocks) {
      switch (block.state) {
        case BlockState::active_allocated: {
          state.allocated = saturating_add(state.allocated, block.size);
          DumpSite& site = sites[segment.device][site_of(snapshot.stacks, block.frames)];
          site.bytes = saturating_add(site.bytes, block.size);
          ++site.blocks;
          break;
        }
        case BlockState::active_pending_free:
          state.pending_free = saturating_add(state.pending_free, block.size);
          break;
        case BlockState::inactive:
          state.largest_free_block = std::max(state.largest_free_block, block.size);
          break;
      }
    }
  }
  std::vector<DumpState> out;
  for (auto& [device, state] : states) {
    for (auto& [name, site] : sites[device]) {
      site.site = name;
      state.sites.push_back(site);
    }
    std::stable_sort(state.sites.begin(), state.sites.end(),
                     [](const DumpSite& a, const DumpSite& b) { return a.bytes > b.bytes; });
    out.push_back(std::move(state));
  }
  return out;
}

}  // namespace oomlab::replay
