#include "harness/replay/replay.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
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
        pointers_(device.events.size(), nullptr), free_requested_(device.events.size(), false),
        segment_pools_(plan.segments.segments.size()) {
    for (std::size_t i = 0; i < segment_pools_.size(); ++i) {
      if (const auto& pool = plan.segments.segments[i].pool) segment_pools_[i] = handle_of(*pool);
    }
  }

  ReplayResult run() {
    measuring_ = options_.measure_from == 0;
    auto next_empty_cache = options_.empty_cache_after.begin();
    for (const ReplayStep& step : plan_.steps) {
      const std::size_t expected = options_.compare ? step.decision_count : 0;
      source_.begin_step(plan_.decisions.data() + step.first_decision, expected);
      bool global_empty_cache = true;
      if (!pool_usage_.empty()) global_empty_cache = let_go_of_released_pools(step);
      if (step.event != kNoEvent) {
        measuring_ = step.event >= options_.measure_from;
        count_free_requests_before(step.event);
        if (global_empty_cache || device_.events[step.event].kind != ReplayEventKind::empty_cache) {
          perform(step.event);
        } else {
          ++result_.requests;
        }
      }
      if (!pool_usage_.empty() && measuring_) track_pools();
      if (options_.compare) compare(step);
      if (measuring_) track_peaks(step.event);
      while (next_empty_cache != options_.empty_cache_after.end() && *next_empty_cache <= step.event &&
             step.event != kNoEvent) {
        if (*next_empty_cache == step.event) allocator_.empty_cache();
        ++next_empty_cache;
      }
    }
    result_.final_stats = allocator_.stats();
    finish_pools();
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
        pointers_[index] = try_allocate(index, event, false, pool_of_alloc(index, event));
        if (pointers_[index] != nullptr) allocated_ += allocator_.block_size(pointers_[index]);
        break;
      case ReplayEventKind::oom: {
        ++result_.pytorch_ooms;
        void* fitted = try_allocate(index, event, true, memory::kDefaultPool);
        if (fitted != nullptr) {
          diverge(index, "out of memory", "allocated (freed at once: PyTorch's program never had it)");
          const std::size_t bytes = allocator_.block_size(fitted);
          allocated_ += bytes;
          if (measuring_) track_peaks(index);  // the run's need includes the request that failed
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
        if (!free_requested_[event.alloc_event]) allocated_ -= allocator_.block_size(block);
        allocator_.deallocate(block);
        pointers_[event.alloc_event] = nullptr;
        break;
      }
      case ReplayEventKind::empty_cache: allocator_.empty_cache(); break;
      default: break;
    }
  }

  // PyTorch's allocated bytes fall at free_requested, when the program drops the block, though
  // the block stays in use until free_completed (record_stream: the other streams' events).
  // free_requested is no request (the replay frees at free_completed): counted here, in order.
  void count_free_requests_before(std::size_t event) {
    for (; next_unread_ < event; ++next_unread_) {
      const ReplayEvent& request = device_.events[next_unread_];
      if (request.kind != ReplayEventKind::free_requested || request.alloc_event == kNoEvent) continue;
      void* block = pointers_[request.alloc_event];
      if (block == nullptr || free_requested_[request.alloc_event]) continue;
      free_requested_[request.alloc_event] = true;
      allocated_ -= allocator_.block_size(block);
    }
    next_unread_ = std::max(next_unread_, event + 1);
  }

  void* try_allocate(std::size_t index, const ReplayEvent& event, bool pytorch_failed, memory::PoolHandle pool) {
    try {
      return allocator_.allocate(event.size, memory::Tag::other, stream_handle(event.stream), pool);
    } catch (const memory::OomError& oom) {
      if (index >= options_.measure_from) result_.ooms.push_back({index, pytorch_failed, oom.info(), oom.what()});
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

  // ---- private pools (replay_pools.hpp) ----
  memory::PoolHandle handle_of(const PoolId& id) {
    if (id.is_default()) return memory::kDefaultPool;
    const auto [it, added] = known_pools_.try_emplace(std::make_pair(id.first, id.second), 0);
    if (added) {
      it->second = new_pool("private (" + std::to_string(id.first) + ", " + std::to_string(id.second) + ")");
    }
    return it->second;
  }

  memory::PoolHandle new_pool(std::string name) {
    if (pool_usage_.empty()) pool_usage_[memory::kDefaultPool] = PoolUsage{"default", true};
    const memory::PoolHandle handle = pool_usage_.rbegin()->first + 1;
    if (name.empty()) name = "private #" + std::to_string(handle) + " (inferred)";
    pool_usage_[handle] = PoolUsage{std::move(name)};
    return handle;
  }

  // The pool of the segment PyTorch put the block in.
  memory::PoolHandle pool_of_alloc(std::size_t index, const ReplayEvent& event) {
    const std::uint32_t segment = plan_.segments.segment_of[index];
    if (segment == kNoSegment) return memory::kDefaultPool;
    std::optional<memory::PoolHandle>& pool = segment_pools_[segment];
    if (!pool) pool = resolve_pool(event);
    if (*pool != memory::kDefaultPool) last_private_ = *pool;
    return *pool;
  }

  // A segment released before the snapshot: its pool is not written anywhere. PyTorch put the
  // block there although the default pool had a cached block for it: the request was a private
  // pool's (a graph capture, use_mem_pool), the one used last unless that one had a block too,
  // else a pool of its own. Otherwise it is read as the default pool's.
  memory::PoolHandle resolve_pool(const ReplayEvent& event) {
    const memory::StreamHandle stream = stream_handle(event.stream);
    const auto size = static_cast<std::size_t>(event.size);
    if (!allocator_.cached_block_fits(size, stream, memory::kDefaultPool)) return memory::kDefaultPool;
    if (last_private_ && !allocator_.cached_block_fits(size, stream, *last_private_)) return *last_private_;
    return new_pool("");
  }

  // PyTorch released a private pool's segment: its owner let go of the pool. Releases that start
  // with a private pool's are that pool's own emptying (the MemPool destructor), done here;
  // returns whether the step's empty_cache also released the default pools (else it is skipped).
  bool let_go_of_released_pools(const ReplayStep& step) {
    bool first = true, pool_first = false, default_released = false;
    for (std::uint32_t k = 0; k < step.decision_count; ++k) {
      const SegmentDecision& decision = plan_.decisions[step.first_decision + k];
      if (!is_release(decision.kind)) continue;
      const std::uint32_t segment = plan_.segments.segment_of[decision.event];
      const auto pool = segment == kNoSegment ? std::nullopt : segment_pools_[segment];
      const bool is_private = pool && *pool != memory::kDefaultPool;
      if (first) pool_first = is_private;
      first = false;
      default_released = default_released || !is_private;
      if (!is_private) continue;
      const bool own_emptying = pool_first && step.event != kNoEvent &&
                                device_.events[step.event].kind == ReplayEventKind::empty_cache;
      if (own_emptying) {
        allocator_.release_pool(*pool);
      } else {
        allocator_.mark_pool_freeable(*pool);
      }
    }
    return default_released || !pool_first;
  }

  void track_pools() {
    for (auto& [handle, usage] : pool_usage_) {
      const memory::PoolBytes bytes = allocator_.pool_bytes(handle);
      usage.peak_reserved = std::max<std::uint64_t>(usage.peak_reserved, bytes.reserved);
      usage.peak_allocated = std::max<std::uint64_t>(usage.peak_allocated, bytes.allocated);
    }
  }

  void finish_pools() {
    for (auto& [handle, usage] : pool_usage_) {
      const memory::PoolBytes bytes = allocator_.pool_bytes(handle);
      usage.reserved_at_end = bytes.reserved;
      usage.allocated_at_end = bytes.allocated;
      result_.pools.push_back(usage);
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
  std::vector<bool> free_requested_;  // by alloc event: dropped by the program, not yet back
  std::size_t next_unread_ = 0;       // the first event count_free_requests_before has not read
  std::vector<std::optional<memory::PoolHandle>> segment_pools_;  // by traced segment; nullopt: not yet known
  std::map<std::pair<std::uint64_t, std::uint64_t>, memory::PoolHandle> known_pools_;  // the snapshot's ids
  std::map<memory::PoolHandle, PoolUsage> pool_usage_;  // empty until a private pool appears
  std::optional<memory::PoolHandle> last_private_;
  std::uint64_t allocated_ = 0;
  bool measuring_ = false;  // in the window: past options_.measure_from
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
