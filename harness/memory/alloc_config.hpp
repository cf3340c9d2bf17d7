// Allocator settings, from the API or from OOMLAB_ALLOC_CONF in PYTORCH_CUDA_ALLOC_CONF's syntax:
// "max_split_size_mb:128,expandable_segments:True,roundup_power2_divisions:[256:1,512:2,>:4]".
// Every key of PyTorch's CUDAAllocatorConfig is read (c10/core/AllocatorConfig.cpp and
// c10/cuda/CUDAAllocatorConfig.cpp); those that change nothing a simulation can see (pinned host
// memory, the lock around cudaMalloc) are accepted and noted in AllocatorConfig::notes.
#pragma once
#include <array>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace oomlab::memory {

// roundup_power2_divisions has one entry per power-of-two interval of request sizes, from
// [1 MiB, 2 MiB) (which also takes every smaller request) to [32 GiB, ...).
constexpr std::size_t kRoundupIntervals = 16;
using RoundupTable = std::array<std::size_t, kRoundupIntervals>;

struct AllocatorConfig {
  static constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();

  std::size_t max_split_size = kUnlimited;  // cached blocks larger than this are never split
  // An oversize block serves a request >= max_split_size only if it wastes less than this.
  std::size_t max_non_split_rounding = 20u << 20;
  // Requests in an interval with n > 1 divisions round up to the next 1/n of its power of two
  // (1200 B with 4: 1280 B) instead of to 512 B; 0 everywhere: off.
  RoundupTable roundup_power2_divisions{};
  // Under a budget, when a request needs a new segment and reserved exceeds this fraction of
  // the budget, whole cached segments are released, oldest (least reused) first. 0: off.
  double garbage_collection_threshold = 0;
  bool expandable_segments = false;         // grow one mapped range per stream instead of segments
  // false: no cache at all, as PYTORCH_NO_CUDA_MEMORY_CACHING=1: every request is its own
  // source allocation, returned at once when freed (reserved == allocated at every moment).
  bool caching = true;
  std::size_t budget = kUnlimited;          // cap on reserved bytes (plus simulated_external)
  // How the budget caps: false (every run): as the device does, every segment and every mapped
  // page must fit. true (a replay of a run under set_per_process_memory_fraction): as PyTorch's
  // fraction does, a request that needs memory must fit its would-be segment (2 MiB, 20 MiB or
  // its size) under the cap; expandable segments then map whole granules, which can pass the
  // cap by less than one. Not an OOMLAB_ALLOC_CONF key.
  bool budget_is_fraction = false;
  std::size_t simulated_external = 0;       // device bytes taken outside the allocator on host/dry
  std::size_t trace_capacity = 1 << 16;     // events the trace keeps; older ones are dropped and counted
  // Best fit breaks ties by address, as PyTorch does, instead of by (segment id, offset). Only a
  // replay sets it: its source hands out PyTorch's own addresses. Not an OOMLAB_ALLOC_CONF key.
  bool ties_by_address = false;
  // Keys accepted without effect, one line each (printed by commands that take the setting).
  std::vector<std::string> notes;

  std::string to_string() const;            // back in OOMLAB_ALLOC_CONF syntax (settings that act)
};

// Parses the OOMLAB_ALLOC_CONF syntax over `base`. Keys (PyTorch's, then oomlab's own):
//   max_split_size_mb (>= 20), max_non_split_rounding_mb (>= 20), garbage_collection_threshold
//   (0 < t < 1), roundup_power2_divisions (a power of 2, or a list "[256:1,512:2,>:4]" of
//   interval-in-MiB:divisions), expandable_segments, backend (native only),
//   release_lock_on_cudamalloc, pinned_use_cuda_host_register, pinned_num_register_threads,
//   pinned_use_background_threads, pinned_reserve_segment_size_mb,
//   graph_capture_record_stream_reuse (the last six noted and ignored); caching (false: no
//   cache), trace_capacity (events the trace keeps, default 65536).
// Booleans: True/False, true/false, 1/0. A key in `text` overrides `base` (--alloc-conf over
// the environment); a key given twice in `text` is an error. Throws std::invalid_argument
// naming `source` (where the text came from: the variable or option the user set) and the bad
// key or value.
AllocatorConfig parse_alloc_conf(std::string_view text, AllocatorConfig base = {},
                                 std::string_view source = "OOMLAB_ALLOC_CONF");
// parse_alloc_conf(getenv("OOMLAB_ALLOC_CONF")) over `base` when set; then
// OOMLAB_NO_MEMORY_CACHING (set, not empty and not "0": caching off), PyTorch's
// PYTORCH_NO_CUDA_MEMORY_CACHING for oomlab.
AllocatorConfig alloc_conf_from_env(AllocatorConfig base = {});

}  // namespace oomlab::memory
