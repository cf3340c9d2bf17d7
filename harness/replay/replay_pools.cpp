#include "harness/replay/replay_pools.hpp"

#include <iterator>
#include <map>

namespace oomlab::replay {
namespace {

// The snapshot's segments on this device, by address: what was there at the end.
class FinalSegments {
 public:
  FinalSegments(const Snapshot& snapshot, int device) {
    for (const Segment& segment : snapshot.segments) {
      if (segment.device == device) by_address_.emplace(segment.address, &segment);
    }
  }
  const Segment* containing(std::uint64_t addr) const {
    auto it = by_address_.upper_bound(addr);
    if (it == by_address_.begin()) return nullptr;
    --it;
    return addr - it->first < it->second->total_size ? it->second : nullptr;
  }

 private:
  std::map<std::uint64_t, const Segment*> by_address_;
};

}  // namespace

TracedSegments trace_segments(const DeviceEvents& device, const Snapshot& snapshot) {
  TracedSegments out;
  out.segment_of.assign(device.events.size(), kNoSegment);
  const FinalSegments final_segments(snapshot, device.device);
  std::map<std::uint64_t, std::uint32_t> live;  // start -> segment: PyTorch's segments now
  const auto containing = [&](std::uint64_t addr) {
    auto it = live.upper_bound(addr);
    if (it == live.begin()) return kNoSegment;
    --it;
    const TracedSegment& segment = out.segments[it->second];
    return addr - segment.addr < segment.size ? it->second : kNoSegment;
  };
  const auto add = [&](std::uint64_t addr, std::uint64_t size) {
    const auto index = static_cast<std::uint32_t>(out.segments.size());
    out.segments.push_back({addr, size, std::nullopt});
    live[addr] = index;
    return index;
  };
  for (std::size_t i = 0; i < device.events.size(); ++i) {
    const ReplayEvent& event = device.events[i];
    switch (event.kind) {
      case ReplayEventKind::segment_alloc:
      case ReplayEventKind::segment_map: out.segment_of[i] = add(event.addr, event.size); break;
      case ReplayEventKind::segment_free:
      case ReplayEventKind::segment_unmap: {
        // One unmap can cover several mapped pieces of an expandable range.
        out.segment_of[i] = containing(event.addr);
        for (auto it = live.lower_bound(event.addr); it != live.end() && it->first - event.addr < event.size;) {
          it = live.erase(it);
        }
        if (out.segment_of[i] != kNoSegment) live.erase(out.segments[out.segment_of[i]].addr);
        break;
      }
      case ReplayEventKind::alloc: {
        std::uint32_t segment = containing(event.addr);
        if (segment == kNoSegment) {
          // Memory reserved before the trace began: the snapshot's segment says whose, if it is there.
          if (const Segment* known = final_segments.containing(event.addr)) {
            segment = add(known->address, known->total_size);
          }
        }
        out.segment_of[i] = segment;
        break;
      }
      default: break;
    }
  }
  for (const auto& [start, index] : live) {
    const Segment* known = final_segments.containing(start);
    if (known == nullptr) continue;
    out.segments[index].pool = known->pool;
    out.has_private_pools = out.has_private_pools || !known->pool.is_default();
  }
  return out;
}

}  // namespace oomlab::replay
