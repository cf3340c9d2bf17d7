#include "harness/replay/snapshot_events.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>

#include "harness/replay/address_ranges.hpp"

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

std::uint64_t range_end(const TraceEntry& entry) {  // saturating: a hand-made addr may be huge
  return entry.size > UINT64_MAX - entry.addr ? UINT64_MAX : entry.addr + entry.size;
}

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
  out.events.reserve(trace.size());
  std::unordered_map<std::uint64_t, std::size_t> live;  // block address -> its alloc event
  AddressRanges reserved;
  std::size_t release_run_end = 0;
  std::size_t free_requests = 0;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const TraceEntry& entry = trace[i];
    ReplayEvent event;
    switch (entry.action) {
      case TraceAction::alloc: {
        event = event_of(entry, i, ReplayEventKind::alloc);
        const auto [it, inserted] = live.emplace(entry.addr, out.events.size());
        if (!inserted) {
          throw SnapshotError(
              entry_name(device, i) + ": alloc at " + hex(entry.addr) + " while the block " +
              "allocated there at entry " + std::to_string(out.events[it->second].trace_index) +
              " was never freed (free_completed missing: recorded with skip_actions?)");
        }
        if (!reserved.contains(entry.addr)) ++out.allocs_outside_segments;
        ++out.allocs;
        break;
      }
      case TraceAction::free_requested: {
        event = event_of(entry, i, ReplayEventKind::free_requested);
        const auto it = live.find(entry.addr);
        if (it != live.end()) event.alloc_event = it->second;
        ++free_requests;
        break;
      }
      case TraceAction::free_completed: {
        event = event_of(entry, i, ReplayEventKind::free);
        const auto it = live.find(entry.addr);
        if (it != live.end()) {
          event.alloc_event = it->second;
          live.erase(it);
        } else {
          ++out.frees_before_trace;
        }
        ++out.frees;
        break;
      }
      case TraceAction::segment_alloc:
      case TraceAction::segment_map:
        event = event_of(entry, i,
                         entry.action == TraceAction::segment_alloc ? ReplayEventKind::segment_alloc
                                                                    : ReplayEventKind::segment_map);
        reserved.add(entry.addr, range_end(entry));
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
        if (reserved.remove(entry.addr, range_end(entry)) < entry.size) ++out.releases_before_trace;
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
