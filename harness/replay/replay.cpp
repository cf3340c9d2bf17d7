#include "harness/replay/replay.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "harness/memory/caching_allocator.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/trace_export.hpp"
#include "harness/replay/replay_source.hpp"

namespace oomlab::replay {
namespace {

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string stream_name(std::int64_t stream) { return stream == 0 ? "0" : hex(static_cast<std::uint64_t>(stream)); }

memory::StreamHandle stream_handle(std::int64_t stream) {
  return static_cast<memory::StreamHandle>(static_cast<std::uint64_t>(stream));
}

std::string describe_decision(const SegmentDecision& decision) {
  return std::string(replay_event_name(decision.kind)) + " " + format_size(decision.size) + " at " + hex(decision.addr);
}

std::string describe_call(const SegmentCall& call) {
  return std::string(replay_event_name(call.kind)) + " " + format_size(call.size);
}

// The trace keeps every event of a replay asked for one (about two per request), up to a
// million: beyond that the Chrome trace is too large to open, and it keeps the last ones.
std::size_t trace_capacity_for(const ReplayPlan& plan) {
  constexpr std::size_t kMostEvents = std::size_t{1} << 20;
  return std::min(kMostEvents, 4 * plan.steps.size() + 64);
}

class Replayer {
 public:
  Replayer(const DeviceEvents& device, const ReplayPlan& plan, const ReplayOptions& options)
      : device_(device), plan_(plan), options_(options), allocator_(source_, config_for(options, plan)),
        pointers_(device.events.size(), nullptr) {}

  ReplayResult run() {
    auto next_empty_cache = options_.empty_cache_after.begin();
    for (const ReplayStep& step : plan_.steps) {
      const std::size_t expected = options_.compare ? step.decision_count : 0;
      source_.begin_step(plan_.decisions.data() + step.first_decision, expected);
      if (step.event != kNoEvent) perform(step.event);
      if (options_.compare) compare(step);
      track_peaks(step.event);
      while (next_empty_cache != options_.empty_cache_after.end() && *next_empty_cache <= step.event &&
             step.event != kNoEvent) {
        if (*next_empty_cache == step.event) allocator_.empty_cache();
        ++next_empty_cache;
      }
    }
    result_.final_stats = allocator_.stats();
    if (options_.keep_trace) result_.chrome_trace = memory::chrome_trace(allocator_);
    release_live_blocks();
    return std::move(result_);
  }

 private:
  static memory::AllocatorConfig config_for(const ReplayOptions& options, const ReplayPlan& plan) {
    memory::AllocatorConfig config = options.config;
    config.ties_by_address = true;  // the source hands out PyTorch's addresses
    config.trace_capacity = options.keep_trace ? std::max(config.trace_capacity, trace_capacity_for(plan)) : 0;
    return config;
  }

  void perform(std::size_t index) {
    const ReplayEvent& event = device_.events[index];
    ++result_.requests;
    switch (event.kind) {
      case ReplayEventKind::alloc:
        pointers_[index] = try_allocate(index, event, false);
        if (pointers_[index] != nullptr) allocated_ += allocator_.block_size(pointers_[index]);
        break;
      case ReplayEventKind::oom: {
        ++result_.pytorch_ooms;
        void* fitted = try_allocate(index, event, true);
        if (fitted != nullptr) {
          diverge(index, "out of memory", "allocated (freed at once: PyTorch's program never had it)");
          const std::size_t bytes = allocator_.block_size(fitted);
          allocated_ += bytes;
          track_peaks(index);  // the run's need includes the request that failed
          allocated_ -= bytes;
          allocator_.deallocate(fitted);
        }
        break;
      }
      case ReplayEventKind::free: {
        void* block = event.alloc_event == kNoEvent ? nullptr : pointers_[event.alloc_event];
        if (block == nullptr) {
          ++result_.skipped_frees;
          break;
        }
        allocated_ -= allocator_.block_size(block);
        allocator_.deallocate(block);
        pointers_[event.alloc_event] = nullptr;
        break;
      }
      case ReplayEventKind::empty_cache: allocator_.empty_cache(); break;
      default: break;
    }
  }

  void* try_allocate(std::size_t index, const ReplayEvent& event, bool pytorch_failed) {
    try {
      return allocator_.allocate(event.size, memory::Tag::other, stream_handle(event.stream));
    } catch (const memory::OomError& oom) {
      result_.ooms.push_back({index, pytorch_failed, oom.info(), oom.what()});
      if (!pytorch_failed) diverge(index, "allocated", "out of memory");
      return nullptr;
    }
  }

  void compare(const ReplayStep& step) {
    const StepComparison check = source_.end_step();
    if (check.mismatches == 0) return;
    result_.divergent_events += check.mismatches - 1;  // diverge() counts the first
    const std::string pytorch = check.pytorch != nullptr ? describe_decision(*check.pytorch) : "nothing more";
    const std::string oomlab = check.oomlab_made_a_call ? describe_call(check.oomlab) : "nothing more";
    std::size_t at = step.event;
    if (at == kNoEvent && check.pytorch != nullptr) at = check.pytorch->event;
    diverge(at, pytorch, oomlab, step.event == kNoEvent);
  }

  void diverge(std::size_t event, std::string pytorch, std::string oomlab, bool no_request = false) {
    ++result_.divergent_events;
    if (result_.first_divergence) return;
    Divergence d;
    d.event = event;
    d.trace_index = event < device_.events.size() ? device_.events[event].trace_index : 0;
    d.request = no_request ? "(no request: PyTorch released or mapped memory here on its own)"
                           : describe_request(device_, event);
    d.pytorch = std::move(pytorch);
    d.oomlab = std::move(oomlab);
    result_.first_divergence = std::move(d);
  }

  void track_peaks(std::size_t event) {
    if (allocated_ > result_.peak_allocated) {
      result_.peak_allocated = allocated_;
      result_.peak_allocated_event = event;
    }
    if (source_.reserved() > result_.peak_reserved) {
      result_.peak_reserved = source_.reserved();
      result_.fragmentation_at_peak = allocator_.stats().fragmentation;  // only on growth: rare
    }
  }

  // The blocks the trace never frees (live at the snapshot), so the allocator ends empty.
  void release_live_blocks() {
    for (void*& block : pointers_) {
      if (block != nullptr) allocator_.deallocate(block);
      block = nullptr;
    }
  }

  const DeviceEvents& device_;
  const ReplayPlan& plan_;
  const ReplayOptions& options_;
  ReplaySource source_;
  memory::CachingAllocator allocator_;
  std::vector<void*> pointers_;  // by alloc event: the block oomlab gave it
  std::uint64_t allocated_ = 0;
  ReplayResult result_;
};

}  // namespace

std::string describe_request(const DeviceEvents& device, std::size_t event) {
  if (event >= device.events.size()) return "(none)";
  const ReplayEvent& e = device.events[event];
  switch (e.kind) {
    case ReplayEventKind::alloc:
      return "alloc " + format_size(e.size) + " on stream " + stream_name(e.stream);
    case ReplayEventKind::oom:
      return "alloc " + format_size(e.size) + " on stream " + stream_name(e.stream) + " (out of memory in PyTorch)";
    case ReplayEventKind::free:
      if (e.alloc_event == kNoEvent) return "free of a block allocated before the trace";
      return "free of the " + format_size(device.events[e.alloc_event].size) + " block from event " +
             std::to_string(e.alloc_event);
    case ReplayEventKind::empty_cache: return "empty_cache()";
    default: return replay_event_name(e.kind);
  }
}

ReplayResult replay(const DeviceEvents& device, const ReplayPlan& plan, const ReplayOptions& options) {
  return Replayer(device, plan, options).run();
}

}  // namespace oomlab::replay
