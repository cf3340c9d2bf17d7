// Replays a snapshot's requests through oomlab's CachingAllocator on a dry source: every alloc,
// every free at free_completed (when PyTorch had the block back), every empty_cache(), and the
// request that failed. With `compare`, each request's segment decisions (segment_alloc/free/
// map/unmap: the same kind and size, in the same order) and its outcome (allocated or out of
// memory) are checked against PyTorch's; the first difference is kept.
//
// What a replay cannot know, and does:
//  - a request that failed in PyTorch but fits here is freed at once (the trace does not say
//    when the program would have freed it: it never got it);
//  - a request that fits in PyTorch but fails here (a divergence) is skipped, and so is its free;
//  - a free of a block the trace never allocated (it starts mid-run) is skipped.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/oom_error.hpp"
#include "harness/memory/stats.hpp"
#include "harness/replay/replay_plan.hpp"

namespace oomlab::replay {

struct ReplayOptions {
  memory::AllocatorConfig config;  // budget included
  bool compare = false;            // check each step against PyTorch's decisions
  // Steps (indices into DeviceEvents::events of a request) after which empty_cache() is called:
  // the what-if "empty_cache() at phase boundaries". Sorted.
  std::vector<std::size_t> empty_cache_after;
  bool keep_trace = false;         // fill ReplayResult::chrome_trace (oomlab's own trace)
  // A window (--from): the events before this one are replayed (they make the state the window
  // starts from) but peaks, pool peaks and failed requests are counted from it on.
  std::size_t measure_from = 0;
};

// Where oomlab first did something else than PyTorch.
struct Divergence {
  std::size_t event = 0;        // the request's index in DeviceEvents::events (kNoEvent: none)
  std::size_t trace_index = 0;  // its entry in device_traces[device]
  std::string request;          // "alloc 3.00MiB on stream 0"
  std::string pytorch;          // "segment_alloc 20.00MiB at 0x7f3a00000000", "allocated", "nothing"
  std::string oomlab;           // "nothing", "segment_alloc 22.00MiB", "out of memory"
};

struct ReplayOom {
  std::size_t event = 0;             // the failed request
  bool pytorch_failed_too = false;   // an `oom` in PyTorch's trace
  memory::OomInfo info;
  std::string message;
};

// One pool's memory over the replay: PyTorch's OOM message counts graph pools' bytes in
// "reserved by PyTorch" without saying so; this says which pool holds what.
struct PoolUsage {
  std::string name;  // "default", "private (0, 1)" (the snapshot's id), "private #2 (inferred)"
  bool is_default = false;
  std::uint64_t peak_reserved = 0;
  std::uint64_t peak_allocated = 0;
  std::uint64_t reserved_at_end = 0;
  std::uint64_t allocated_at_end = 0;  // the blocks live when the snapshot was taken
};

struct ReplayResult {
  std::size_t requests = 0;
  std::size_t divergent_events = 0;  // decisions or outcomes that differ
  std::optional<Divergence> first_divergence;
  std::vector<ReplayOom> ooms;       // every request that failed here, in order
  std::size_t pytorch_ooms = 0;      // requests that failed in PyTorch
  std::size_t skipped_frees = 0;     // of blocks never allocated here
  std::uint64_t peak_allocated = 0;
  std::uint64_t peak_reserved = 0;
  std::size_t peak_allocated_event = 0;  // the request after which allocated peaked
  double fragmentation_at_peak = 0;  // 1 - largest free block / (reserved - allocated) at the reserved peak
  memory::MemoryStats final_stats;
  std::vector<PoolUsage> pools;      // only when a private pool was used: default first
  nlohmann::json chrome_trace;       // keep_trace: the allocator's trace (Chrome/Perfetto JSON)

  bool fits() const { return ooms.empty(); }
};

ReplayResult replay(const DeviceEvents& device, const ReplayPlan& plan, const ReplayOptions& options);

// "alloc 3.00MiB on stream 0" / "free of the 3.00MiB block from request 12" / "empty_cache()"
std::string describe_request(const DeviceEvents& device, std::size_t event);

}  // namespace oomlab::replay
