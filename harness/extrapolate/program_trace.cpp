#include "harness/extrapolate/program_trace.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "harness/memory/size.hpp"
#include "harness/replay/allocation_sites_frames.hpp"
#include "harness/replay/replay.hpp"

namespace oomlab::extrapolate {
namespace {

using replay::ReplayEventKind;

std::uint64_t fnv1a(std::uint64_t hash, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

// A stack by content: two snapshots number their stacks differently.
class StackKeys {
 public:
  explicit StackKeys(const replay::StackTable& stacks) : stacks_(stacks) {}

  std::uint64_t key(replay::StackId id) {
    const auto found = keys_.find(id);
    if (found != keys_.end()) return found->second;
    std::uint64_t hash = 14695981039346656037ull;
    bool user = false, innermost_seen = false, innermost_user = false;
    for (replay::FrameId frame_id : stacks_.stack(id)) {
      const replay::Frame& frame = stacks_.frame(frame_id);
      hash = fnv1a(hash, frame.filename.data(), frame.filename.size());
      hash = fnv1a(hash, &frame.line, sizeof frame.line);
      hash = fnv1a(hash, frame.name.data(), frame.name.size() + 1);  // with the NUL: fields stay apart
      const replay::FrameKind kind = replay::frame_kind(frame);
      user = user || kind == replay::FrameKind::user;
      if (!innermost_seen && kind != replay::FrameKind::native) {
        innermost_seen = true;
        innermost_user = kind == replay::FrameKind::user;
      }
    }
    user_[id] = user;
    library_side_[id] = !innermost_user;
    return keys_[id] = hash;
  }
  bool user_frame(replay::StackId id) {
    key(id);
    return user_[id];
  }
  bool library_side(replay::StackId id) {
    key(id);
    return library_side_[id];
  }

 private:
  const replay::StackTable& stacks_;
  std::unordered_map<replay::StackId, std::uint64_t> keys_;
  std::unordered_map<replay::StackId, bool> user_, library_side_;
};

std::uint64_t with_action(std::uint64_t key, ReplayEventKind kind) {
  const auto action = static_cast<unsigned char>(kind);
  return fnv1a(key, &action, 1);
}

std::size_t pick_device(const std::vector<replay::DeviceEvents>& devices, int wanted, const std::string& file) {
  std::size_t best = 0;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (wanted >= 0 && devices[i].device == wanted) return i;
    if (devices[i].allocs > devices[best].allocs) best = i;
  }
  if (wanted >= 0) {
    throw std::invalid_argument(file + ": no trace for device " + std::to_string(wanted) + " (--device)");
  }
  return best;
}

// ProgramRequest::in_place for every framed alloc: its first free comes before the next alloc
// from another (non-empty) stack.
void mark_in_place(ProgramTrace& trace, std::vector<std::uint64_t>& stack_of) {
  const std::size_t n = trace.requests.size();
  stack_of.resize(n, 0);
  std::size_t next_framed = n;  // the next framed alloc after r
  std::vector<std::size_t> next_other(n, n);  // by framed alloc: the next framed alloc from another stack
  for (std::size_t r = n; r-- > 0;) {
    if (stack_of[r] == 0) continue;
    next_other[r] = next_framed == n || stack_of[next_framed] != stack_of[r] ? next_framed : next_other[next_framed];
    next_framed = r;
    const std::size_t first_free = std::min(trace.free_of[r], trace.free_requested_of[r]);
    trace.requests[r].in_place = first_free != kNoRequest && first_free < next_other[r];
  }
}

}  // namespace

ProgramTrace program_trace(std::string file, std::int64_t knob, replay::Snapshot snapshot, int device) {
  ProgramTrace trace;
  trace.file = std::move(file);
  trace.knob = knob;
  trace.snapshot = std::move(snapshot);
  std::vector<replay::DeviceEvents> devices = replay::snapshot_events(trace.snapshot);
  trace.events = std::move(devices[pick_device(devices, device, trace.file)]);
  const std::vector<replay::ReplayEvent>& events = trace.events.events;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind == ReplayEventKind::oom) {
      throw std::invalid_argument(trace.file + ": the recorded run ran out of memory (" +
                                  replay::describe_request(trace.events, i) +
                                  "); record the small knob values where the whole step runs");
    }
  }
  StackKeys keys(trace.snapshot.stacks);
  std::vector<std::uint64_t> stack_of;  // by request: the alloc's stack key (0: frameless or not an alloc)
  std::vector<std::size_t> request_of_event(events.size(), kNoRequest);
  trace.requests.reserve(trace.events.allocs * 3 + trace.events.empty_caches);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const replay::ReplayEvent& event = events[i];
    ProgramRequest request;
    request.kind = event.kind;
    request.event = i;
    switch (event.kind) {
      case ReplayEventKind::alloc:
        request.key = with_action(keys.key(event.frames), event.kind);
        request.user_frame = keys.user_frame(event.frames);
        request.library_side = keys.library_side(event.frames);
        stack_of.resize(trace.requests.size() + 1, 0);
        if (!trace.snapshot.stacks.stack(event.frames).empty()) stack_of.back() = keys.key(event.frames) | 1;
        break;
      case ReplayEventKind::free_requested:
      case ReplayEventKind::free:
        if (event.alloc_event != replay::kNoEvent) {
          request.alloc = request_of_event[event.alloc_event];
          request.key = with_action(trace.requests[request.alloc].key, event.kind);
        } else {
          request.key = with_action(0, event.kind);
        }
        break;
      case ReplayEventKind::empty_cache: request.key = with_action(0, event.kind); break;
      default: continue;  // PyTorch's own decisions and marks: not the program's
    }
    request_of_event[i] = trace.requests.size();
    trace.requests.push_back(request);
  }
  trace.free_of.assign(trace.requests.size(), kNoRequest);
  trace.free_requested_of.assign(trace.requests.size(), kNoRequest);
  for (std::size_t r = 0; r < trace.requests.size(); ++r) {
    const ProgramRequest& request = trace.requests[r];
    if (request.alloc == kNoRequest) continue;
    if (request.kind == ReplayEventKind::free) trace.free_of[request.alloc] = r;
    if (request.kind == ReplayEventKind::free_requested) trace.free_requested_of[request.alloc] = r;
  }
  mark_in_place(trace, stack_of);
  return trace;
}

std::string describe_program_request(const ProgramTrace& trace, std::size_t request) {
  if (request >= trace.requests.size()) return "nothing (the trace ends)";
  const ProgramRequest& r = trace.requests[request];
  const replay::StackTable& stacks = trace.snapshot.stacks;
  switch (r.kind) {
    case ReplayEventKind::alloc:
      return "alloc " + format_size(trace.size(request)) + " at " + replay::site_of(stacks, trace.frames(request));
    case ReplayEventKind::free_requested:
    case ReplayEventKind::free:
      if (r.alloc == kNoRequest) return "free of a block allocated before the trace";
      return std::string(r.kind == ReplayEventKind::free ? "free" : "free_requested") + " of the block from " +
             replay::site_of(stacks, trace.frames(r.alloc));
    default: return "empty_cache()";
  }
}

}  // namespace oomlab::extrapolate
