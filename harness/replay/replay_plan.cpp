#include "harness/replay/replay_plan.hpp"

#include <algorithm>
#include <string>

#include "harness/replay/trace_bytes.hpp"

namespace oomlab::replay {

bool is_segment_decision(ReplayEventKind kind) {
  return kind == ReplayEventKind::segment_alloc || kind == ReplayEventKind::segment_map || is_release(kind);
}

bool is_release(ReplayEventKind kind) {
  return kind == ReplayEventKind::segment_free || kind == ReplayEventKind::segment_unmap;
}

namespace {

[[noreturn]] void refuse_total(const std::string& where, const char* what) {
  throw SnapshotError(where + ": " + what + " would pass " + std::to_string(kMostDeviceBytes) +
                      " bytes, more than any GPU holds: not a trace a real run writes");
}

// The snapshot's segments on this device: what PyTorch held when the snapshot was taken. Each
// size, and so the sum, is checked against kMostDeviceBytes, which keeps the sums in int64.
std::int64_t reserved_at_end(const Snapshot& snapshot, int device) {
  std::int64_t total = 0;
  for (std::size_t i = 0; i < snapshot.segments.size(); ++i) {
    const Segment& segment = snapshot.segments[i];
    if (segment.device != device) continue;
    if (segment.total_size > kMostDeviceBytes - static_cast<std::uint64_t>(total)) {
      refuse_total("segments[" + std::to_string(i) + "]", "the segments' total_size");
    }
    total += static_cast<std::int64_t>(segment.total_size);
  }
  return total;
}

// Reserved bytes move by one decision's size (at most kMostDeviceBytes, snapshot_events checks
// each) and, in a real run, never more than a GPU's memory away from where they started.
void check_net(std::int64_t net, const DeviceEvents& device, std::size_t event) {
  const auto most = static_cast<std::int64_t>(kMostDeviceBytes);
  if (net > most || net < -most) {
    refuse_total("device_traces[" + std::to_string(device.device) + "][" +
                     std::to_string(device.events[event].trace_index) + "]",
                 "PyTorch's reserved bytes");
  }
}

}  // namespace

ReplayPlan plan_replay(const DeviceEvents& device, const Snapshot& snapshot) {
  ReplayPlan plan;
  plan.steps.reserve(device.allocs + device.frees + device.ooms + device.empty_caches + 1);
  std::uint32_t pending_first = 0, pending_count = 0;  // decisions waiting for their request
  bool releases_follow_empty_cache = false;
  const auto close_pending = [&](std::size_t request) {
    if (pending_count > 0 || request != kNoEvent) plan.steps.push_back({request, pending_first, pending_count});
    pending_count = 0;
  };
  std::int64_t reserved = 0, peak = 0, net = 0;
  for (std::size_t i = 0; i < device.events.size(); ++i) {
    const ReplayEvent& event = device.events[i];
    if (is_segment_decision(event.kind)) {
      plan.decisions.push_back({event.kind, event.size, event.addr, i});
      const auto delta = static_cast<std::int64_t>(event.size);
      net += is_release(event.kind) ? -delta : delta;
      check_net(net, device, i);
      if (releases_follow_empty_cache && is_release(event.kind)) {
        ++plan.steps.back().decision_count;
        continue;
      }
      releases_follow_empty_cache = false;
      if (pending_count == 0) pending_first = static_cast<std::uint32_t>(plan.decisions.size() - 1);
      ++pending_count;
      continue;
    }
    releases_follow_empty_cache = false;
    switch (event.kind) {
      case ReplayEventKind::alloc:
      case ReplayEventKind::oom: close_pending(i); break;
      case ReplayEventKind::free:
      case ReplayEventKind::empty_cache:
        close_pending(kNoEvent);
        plan.steps.push_back({i, static_cast<std::uint32_t>(plan.decisions.size()), 0});
        releases_follow_empty_cache = event.kind == ReplayEventKind::empty_cache;
        break;
      default: break;  // free_requested, snapshot: no request
    }
  }
  close_pending(kNoEvent);
  // PyTorch's reserved bytes over the trace, from where it must have started.
  const std::int64_t start = std::max<std::int64_t>(0, reserved_at_end(snapshot, device.device) - net);
  plan.pytorch_reserved_at_start = static_cast<std::uint64_t>(start);
  reserved = start;
  peak = start;
  for (const SegmentDecision& decision : plan.decisions) {
    const auto delta = static_cast<std::int64_t>(decision.size);
    reserved += is_release(decision.kind) ? -delta : delta;
    if (reserved > peak) {
      peak = reserved;
      plan.pytorch_peak_event = decision.event;
    }
  }
  plan.pytorch_peak_reserved = static_cast<std::uint64_t>(peak);
  plan.segments = trace_segments(device, snapshot);
  return plan;
}

}  // namespace oomlab::replay
