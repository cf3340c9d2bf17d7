// The cap a snapshot's run had, read from its trace when the user does not say (--budget). PyTorch
// fails a segment when reserved + the segment would pass the cap (set_per_process_memory_fraction)
// or the device has less free memory than the segment (cudaMalloc), so:
//  - every segment PyTorch got puts the cap at or above reserved + the segment size it checked
//    (for expandable segments the checked size can exceed what it then maps): a lower bound;
//  - every failed attempt puts it below reserved + that size: a request's `oom`, and a request
//    that released cached segments before getting its own (the release-and-retry path), unless
//    garbage collection may have released them instead;
//  - an `oom`'s device_free bounds it too: reserved + device_free is all PyTorch could have had;
//  - with garbage_collection_threshold, a release before a request's segment that no oom preceded
//    is a collection (reserved > threshold x cap) or a retry: the cap is below the looser bound.
// Any cap in [low, high] makes the same decisions; the replay uses the tightest, low.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "harness/memory/alloc_config.hpp"
#include "harness/replay/replay_plan.hpp"

namespace oomlab::replay {

struct BudgetRange {
  std::uint64_t low = 0;
  std::optional<std::uint64_t> high;  // nullopt: nothing failed, no upper bound
  std::size_t ooms = 0;               // evidence used
  std::size_t retries = 0;
  std::size_t collections = 0;        // garbage_collection_threshold on: releases with no oom before
  bool device_refused = false;        // an oom's device_free was below the segment: the device was full
  bool consistent() const { return !high || *high >= low; }
  std::string describe() const;       // "1.23GiB .. 1.30GiB (from 1 oom and 2 cache releases)"
};

BudgetRange infer_budget(const DeviceEvents& device, const ReplayPlan& plan, const memory::AllocatorConfig& config);

}  // namespace oomlab::replay
