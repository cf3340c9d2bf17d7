// One snapshot as the program's own requests, in order: alloc, free_requested, free (the block
// back in the cache: free_completed) and empty_cache, each with the key the alignment compares,
// (action, the alloc's stack by content). Two recordings of one program at two batch sizes make
// the same requests from the same lines; only sizes (and library workspaces) differ.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/replay/snapshot.hpp"
#include "harness/replay/snapshot_events.hpp"

namespace oomlab::extrapolate {

constexpr std::size_t kNoRequest = static_cast<std::size_t>(-1);

// A block handed back: free_requested (the program let go of it) or free (back in the cache).
inline bool is_free(replay::ReplayEventKind kind) {
  return kind == replay::ReplayEventKind::free || kind == replay::ReplayEventKind::free_requested;
}

struct ProgramRequest {
  replay::ReplayEventKind kind = replay::ReplayEventKind::alloc;  // alloc, free_requested, free, empty_cache
  std::size_t event = 0;         // its index in ProgramTrace::events.events
  std::size_t alloc = kNoRequest;  // free_requested / free: the request of the block's alloc (none: before the trace)
  std::uint64_t key = 0;         // action and the alloc's frames (file, line, function), hashed
  bool user_frame = false;       // the alloc's stack has a frame in the program's own code
  // The alloc's innermost Python frame is not the program's (torch, a library, generated code),
  // or it has none: memory a library asked for, e.g. cuDNN's workspace inside conv2d.
  bool library_side = false;
  // alloc: the block is returned before any request from another Python stack is made (the op
  // that asked for it has not returned yet): an op's scratch, such as cuDNN's workspace inside
  // conv2d, which shares the frames of the op's output but not its lifetime. Frameless requests
  // count as no other stack, so library workspaces a batch adds or drops never change it; a
  // frameless alloc is never in place.
  bool in_place = false;
};

struct ProgramTrace {
  std::string file;
  std::int64_t knob = 0;
  replay::Snapshot snapshot;
  replay::DeviceEvents events;   // the traced device's
  std::vector<ProgramRequest> requests;
  // By alloc request: its free and free_requested requests (kNoRequest: still live at the end).
  std::vector<std::size_t> free_of, free_requested_of;

  // A library's scratch memory: asked for in library code and freed within `window` requests, or
  // under a Python stack and returned in place.
  bool workspace_like(std::size_t alloc, std::size_t window) const {
    const ProgramRequest& request = requests[alloc];
    if (!request.library_side || free_of[alloc] == kNoRequest) return false;
    return free_of[alloc] - alloc <= window || request.in_place;
  }
  std::uint64_t size(std::size_t request) const { return events.events[requests[request].event].size; }
  replay::StackId frames(std::size_t request) const { return events.events[requests[request].event].frames; }
};

// `device` -1: the device with the most allocs. Throws replay::SnapshotError (no history) and
// std::invalid_argument, one line naming the file: the device not traced, an OOM in the
// recording (a small knob value must run to the end).
ProgramTrace program_trace(std::string file, std::int64_t knob, replay::Snapshot snapshot, int device);

// "alloc 3.00MiB at train.py:42 forward" / "free of the block from train.py:42 forward"
std::string describe_program_request(const ProgramTrace& trace, std::size_t request);

}  // namespace oomlab::extrapolate
