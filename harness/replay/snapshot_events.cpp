#include "harness/replay/snapshot_events.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "harness/replay/address_ranges.hpp"
#include "harness/replay/trace_bytes.hpp"

namespace oomlab::replay {

const char* replay_event_name(ReplayEventKind kind) {
  switch (kind) {
    case ReplayEventKind::alloc: return "alloc";
    case ReplayEventKind::free_requested: return "free_requested";
    case ReplayEventKind::free: return "free";
    case ReplayEventKind::empty_cache: return "empty_cache";
    case ReplayEventKind::segment_alloc: return "segment_alloc";
    case ReplayEventKind::segment_free: return "segment_free";
    case ReplayEventKind::segment_map: return "segment_map";
    case ReplayEventKind::segment_unmap: return "segment_unmap";
    case ReplayEventKind::oom: return "oom";
    case ReplayEventKind::snapshot: return "snapshot";
  }
  return "?";
}

namespace {

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string entry_name(int device, std::size_t index) {
  return "device_traces[" + std::to_string(device) + "][" + std::to_string(index) + "]";
}

// Entries that name a range of device memory: its end must be inside the address space.
bool names_a_range(TraceAction action) {
  return action != TraceAction::oom && action != TraceAction::snapshot && action != TraceAction::other;
}

// Memory PyTorch got: no more than a GPU holds.
bool holds_memory(TraceAction action) {
  return action == TraceAction::alloc || action == TraceAction::segment_alloc ||
         action == TraceAction::segment_map;
}

// A trace entry no real run writes: one line naming it, as the other trace errors do.
void check_entry(int device, std::size_t index, const TraceEntry& entry) {
  const auto refuse = [&](const std::string& problem) {
    throw SnapshotError(entry_name(device, index) + ": '" + trace_action_name(entry.action) + "' " + problem +
                        ": not a trace a real run writes");
  };
  if (names_a_range(entry.action) && !checked_end(entry.addr, entry.size)) {
    refuse("of " + std::to_string(entry.size) + " bytes at " + hex(entry.addr) +
           " ends past the end of the address space");
  }
  if (holds_memory(entry.action) && entry.size > kMostDeviceBytes) {
    refuse("of " + std::to_string(entry.size) + " bytes is more than any GPU holds");
  }
  if (entry.action == TraceAction::oom && entry.device_free > kMostDeviceBytes) {
    refuse("says the device had " + std::to_string(entry.device_free) + " bytes free, more than any GPU holds");
  }
}

// The blocks a trace has allocated and not yet freed (free_completed), by address: an alloc
// that overlaps one of them is impossible (PyTorch hands a block out once).
class LiveBlocks {
 public:
  struct Block {
    std::uint64_t end;
    std::size_t event;  // its alloc's index in DeviceEvents::events
  };
  // The live block [addr, end) overlaps, or nullptr.
  const std::pair<const std::uint64_t, Block>* overlapping(std::uint64_t addr, std::uint64_t end) const {
    auto after = blocks_.upper_bound(addr);
    if (after != blocks_.begin()) {
      const auto before = std::prev(after);
      if (before->first == addr || before->second.end > addr) return &*before;
    }
    if (after != blocks_.end() && after->first < end) return &*after;
    return nullptr;
  }
  void add(std::uint64_t addr, std::uint64_t end, std::size_t event) { blocks_.emplace(addr, Block{end, event}); }
  // The alloc event of the block at addr, or kNoEvent; `remove` forgets it.
  std::size_t event_at(std::uint64_t addr, bool remove) {
    const auto it = blocks_.find(addr);
    if (it == blocks_.end()) return kNoEvent;
    const std::size_t event = it->second.event;
    if (remove) blocks_.erase(it);
    return event;
  }

 private:
  std::map<std::uint64_t, Block> blocks_;  // by address
};

bool is_release(TraceAction action) {
  return action == TraceAction::segment_free || action == TraceAction::segment_unmap;
}

// What a malloc records after it released cache: the segment it then got, or the block, or
// the OOM (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc).
bool completes_a_request(TraceAction action) {
  return action == TraceAction::alloc || action == TraceAction::oom ||
         action == TraceAction::segment_alloc || action == TraceAction::segment_map;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// torch.cuda.empty_cache()'s own frame (emptyCache gathers context at RecordContext::ALL).
bool shows_empty_cache(const StackTable& stacks, StackId id) {
  for (FrameId frame_id : stacks.stack(id)) {
    const Frame& frame = stacks.frame(frame_id);
    if (frame.name == "empty_cache" && ends_with(frame.filename, "torch/cuda/memory.py")) {
      return true;
    }
  }
  return false;
}

// The releases from trace[first]: returns where their run ends and whether it was an explicit
// empty_cache() rather than a request releasing cache to retry (see the header).
std::size_t release_run(const std::vector<TraceEntry>& trace, std::size_t first,
                        const StackTable& stacks, bool& is_empty_cache) {
  bool frames_say_empty_cache = false;
  std::size_t i = first;
  for (; i < trace.size(); ++i) {
    if (is_release(trace[i].action)) {
      frames_say_empty_cache = frames_say_empty_cache || shows_empty_cache(stacks, trace[i].frames);
    } else if (trace[i].action != TraceAction::free_completed) {
      break;
    }
  }
  is_empty_cache =
      frames_say_empty_cache || i == trace.size() || !completes_a_request(trace[i].action);
  return i;
}

ReplayEvent event_of(const TraceEntry& entry, std::size_t index, ReplayEventKind kind) {
  ReplayEvent event;
  event.kind = kind;
  event.trace_index = index;
  event.addr = entry.addr;
  event.size = entry.size;
  event.stream = entry.stream;
  event.device_free = entry.device_free;
  event.time_us = entry.time_us;
  event.frames = entry.frames;
  return event;
}

DeviceEvents device_events(int device, const std::vector<TraceEntry>& trace,
                           const StackTable& stacks) {
  DeviceEvents out;
  out.device = device;
  out.trace_entries = trace.size();
  // One event per entry, and an empty_cache call before a run of releases: reserved whole, as a
  // vector that grows past a 40M-entry trace would hold two copies at once.
  std::size_t releases = 0;
  for (const TraceEntry& entry : trace) {
    releases += entry.action == TraceAction::segment_free || entry.action == TraceAction::segment_unmap;
  }
  out.events.reserve(trace.size() + releases);
  LiveBlocks live;
  AddressRanges reserved;
  std::size_t release_run_end = 0;
  std::size_t free_requests = 0;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const TraceEntry& entry = trace[i];
    check_entry(device, i, entry);
    const std::uint64_t end = names_a_range(entry.action) ? entry.addr + entry.size : 0;  // checked
    ReplayEvent event;
    switch (entry.action) {
      case TraceAction::alloc: {
        event = event_of(entry, i, ReplayEventKind::alloc);
        // A 0-byte block still has its address: two blocks never start at the same one.
        if (const auto* other = live.overlapping(entry.addr, std::max(end, entry.addr + 1))) {
          const std::size_t other_entry = out.events[other->second.event].trace_index;
          throw SnapshotError(entry_name(device, i) + ": alloc of " + std::to_string(entry.size) + " bytes at " +
                              hex(entry.addr) + " overlaps the block allocated at " + hex(other->first) +
                              " by entry " + std::to_string(other_entry) +
                              ", never freed (free_completed missing: recorded with skip_actions?)");
        }
        live.add(entry.addr, end, out.events.size());
        if (!reserved.contains(entry.addr)) ++out.allocs_outside_segments;
        ++out.allocs;
        break;
      }
      case TraceAction::free_requested: {
        event = event_of(entry, i, ReplayEventKind::free_requested);
        event.alloc_event = live.event_at(entry.addr, false);
        ++free_requests;
        break;
      }
      case TraceAction::free_completed: {
        event = event_of(entry, i, ReplayEventKind::free);
        event.alloc_event = live.event_at(entry.addr, true);
        if (event.alloc_event == kNoEvent) ++out.frees_before_trace;
        ++out.frees;
        break;
      }
      case TraceAction::segment_alloc:
      case TraceAction::segment_map:
        event = event_of(entry, i,
                         entry.action == TraceAction::segment_alloc ? ReplayEventKind::segment_alloc
                                                                    : ReplayEventKind::segment_map);
        reserved.add(entry.addr, end);
        break;
      case TraceAction::segment_free:
      case TraceAction::segment_unmap: {
        if (i >= release_run_end) {
          bool is_empty_cache = false;
          release_run_end = release_run(trace, i, stacks, is_empty_cache);
          if (is_empty_cache) {
            ReplayEvent call = event_of(entry, i, ReplayEventKind::empty_cache);
            call.addr = call.size = 0;
            out.events.push_back(call);
            ++out.empty_caches;
          }
        }
        event =
            event_of(entry, i,
                     entry.action == TraceAction::segment_free ? ReplayEventKind::segment_free
                                                               : ReplayEventKind::segment_unmap);
        if (reserved.remove(entry.addr, end) < entry.size) ++out.releases_before_trace;
        break;
      }
      case TraceAction::oom:
        event = event_of(entry, i, ReplayEventKind::oom);
        ++out.ooms;
        break;
      case TraceAction::snapshot: event = event_of(entry, i, ReplayEventKind::snapshot); break;
      case TraceAction::other: ++out.skipped_entries; continue;
    }
    out.events.push_back(event);
  }
  if (free_requests > 0 && out.frees == 0) {
    throw SnapshotError("device_traces[" + std::to_string(device) +
                        "]: " + std::to_string(free_requests) +
                        " free_requested entries and no free_completed: the trace was recorded "
                        "with skip_actions=['free_completed'], and a replay needs them (the "
                        "moment a block is back in the cache)");
  }
  return out;
}

}  // namespace

std::vector<DeviceEvents> snapshot_events(const Snapshot& snapshot) {
  std::vector<DeviceEvents> devices;
  std::size_t entries = 0;
  bool has_requests = false;
  for (std::size_t device = 0; device < snapshot.device_traces.size(); ++device) {
    const std::vector<TraceEntry>& trace = snapshot.device_traces[device];
    if (trace.empty()) continue;
    entries += trace.size();
    devices.push_back(device_events(static_cast<int>(device), trace, snapshot.stacks));
    has_requests = has_requests || devices.back().allocs > 0 || devices.back().ooms > 0;
  }
  if (!has_requests) {
    throw SnapshotError(
        "the snapshot has no allocation history to replay (" + std::to_string(entries) +
        " trace entries, no alloc): record it with "
        "torch.cuda.memory._record_memory_history(max_entries=1000000) before the run, then "
        "torch.cuda.memory._dump_snapshot(path) (history was off, or enabled='state', or "
        "skip_actions held 'alloc')");
  }
  return devices;
}

}  // namespace oomlab::replay
