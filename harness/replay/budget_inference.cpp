#include "harness/replay/budget_inference.hpp"

#include <algorithm>
#include <cmath>

#include "harness/memory/alloc_rounding.hpp"
#include "harness/memory/size.hpp"
#include "harness/replay/trace_bytes.hpp"

namespace oomlab::replay {
namespace {

void lower_high(BudgetRange& range, std::uint64_t bound) {
  range.high = range.high ? std::min(*range.high, bound) : bound;
}

// The segment size PyTorch's alloc_block checks against the cap for this request.
std::uint64_t checked_size(const ReplayEvent& request, const memory::AllocatorConfig& config) {
  // An oom may name any size (a request no GPU holds fails too); rounding one near 2^64 wraps.
  if (request.size > kMostDeviceBytes) return request.size;
  const std::size_t rounded = request.kind == ReplayEventKind::oom
                                  ? static_cast<std::size_t>(request.size)  // already rounded
                                  : memory::round_request(static_cast<std::size_t>(request.size),
                                                          config.roundup_power2_divisions);
  return memory::allocation_size(rounded);
}

// The largest cap under which garbage collection runs with `reserved` bytes held: PyTorch
// collects when reserved > size_t(threshold * cap) (garbage_collect_cached_blocks).
std::uint64_t largest_cap_collecting_at(std::uint64_t reserved, double threshold) {
  const auto collects = [&](std::uint64_t cap) {
    return static_cast<std::uint64_t>(threshold * static_cast<double>(cap)) < reserved;
  };
  auto cap = static_cast<std::uint64_t>(std::ceil(static_cast<double>(reserved) / threshold));
  while (cap > 0 && !collects(cap)) --cap;  // the division's rounding, a step or two
  while (collects(cap + 1)) ++cap;
  return cap;
}

}  // namespace

std::string BudgetRange::describe() const {
  std::string text = format_size(low) + " .. " + (high ? format_size(*high) : std::string("unbounded"));
  std::string evidence;
  if (ooms > 0) evidence = std::to_string(ooms) + " oom" + (ooms > 1 ? "s" : "");
  if (retries > 0) {
    evidence += (evidence.empty() ? "" : " and ") + std::to_string(retries) + " cache release" +
                (retries > 1 ? "s" : "") + " before a retry";
  }
  if (collections > 0) {
    evidence += (evidence.empty() ? "" : " and ") + std::to_string(collections) + " garbage collection" +
                (collections > 1 ? "s" : "");
  }
  return text + (evidence.empty() ? " (no oom or cache release in the trace)" : " (from " + evidence + ")");
}

BudgetRange infer_budget(const DeviceEvents& device, const ReplayPlan& plan, const memory::AllocatorConfig& config) {
  BudgetRange range;
  // Garbage collection releases cached segments before a request's first attempt: such a
  // release says nothing about a failure.
  const bool releases_prove_failure = config.garbage_collection_threshold <= 0;
  std::uint64_t reserved = plan.pytorch_reserved_at_start;
  range.low = reserved;
  for (const ReplayStep& step : plan.steps) {
    const bool request = step.event != kNoEvent;
    const ReplayEvent* event = request ? &device.events[step.event] : nullptr;
    const bool is_malloc = request && (event->kind == ReplayEventKind::alloc || event->kind == ReplayEventKind::oom);
    const std::uint64_t checked = is_malloc ? checked_size(*event, config) : 0;
    bool released = false;
    std::uint64_t before_release = reserved;
    for (std::uint32_t k = 0; k < step.decision_count; ++k) {
      const SegmentDecision& decision = plan.decisions[step.first_decision + k];
      if (is_release(decision.kind)) {
        if (!released) before_release = reserved;
        released = true;
        reserved -= std::min(reserved, decision.size);
        continue;
      }
      // A segment it got: the check before it passed. (A mapped granule can pass a fraction.)
      if (is_malloc) range.low = std::max(range.low, saturating_add(reserved, checked));
      reserved += decision.size;
      if (decision.kind == ReplayEventKind::segment_alloc) range.low = std::max(range.low, reserved);
      if (is_malloc && released && releases_prove_failure) {
        lower_high(range, saturating_add(before_release, checked) - 1);
        ++range.retries;
        released = false;
      } else if (is_malloc && released) {
        // No oom before it: garbage collection (reserved passed threshold x cap) or a release to
        // retry (reserved + the segment passed the cap). Either bounds the cap; the looser holds.
        const std::uint64_t retry_bound = saturating_add(before_release, checked) - 1;
        const double threshold = config.garbage_collection_threshold;
        lower_high(range, std::max(retry_bound, largest_cap_collecting_at(before_release, threshold)));
        ++range.collections;
        released = false;
      }
    }
    if (request && event->kind == ReplayEventKind::oom) {
      ++range.ooms;
      lower_high(range, saturating_add(reserved, checked) - 1);
      lower_high(range, reserved + event->device_free);
      range.device_refused = range.device_refused || event->device_free < checked;
    }
  }
  return range;
}

}  // namespace oomlab::replay
