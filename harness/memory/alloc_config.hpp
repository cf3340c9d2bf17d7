// Allocator settings, from the API or from OOMLAB_ALLOC_CONF in PYTORCH_CUDA_ALLOC_CONF's syntax:
// "max_split_size_mb:128,expandable_segments:true".
#pragma once
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace oomlab::memory {

struct AllocatorConfig {
  static constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();

  std::size_t max_split_size = kUnlimited;  // cached blocks larger than this are never split
  bool expandable_segments = false;         // grow one mapped range per stream instead of segments
  std::size_t budget = kUnlimited;          // cap on reserved bytes (plus simulated_external)
  std::size_t simulated_external = 0;       // device bytes taken outside the allocator on host/dry
  std::size_t trace_capacity = 1 << 16;     // events kept; older ones are dropped and counted

  std::string to_string() const;            // back in OOMLAB_ALLOC_CONF syntax
};

// Parses the OOMLAB_ALLOC_CONF syntax over `base`. Keys: max_split_size_mb (>= 20),
// expandable_segments (true|false), trace_capacity (events the trace keeps, default 65536).
// A key in `text` overrides `base` (--alloc-conf over the
// environment); a key given twice in `text` is an error. Throws std::invalid_argument naming
// the bad key or value.
AllocatorConfig parse_alloc_conf(std::string_view text, AllocatorConfig base = {});
// parse_alloc_conf(getenv("OOMLAB_ALLOC_CONF")) or `base` when unset.
AllocatorConfig alloc_conf_from_env(AllocatorConfig base = {});

}  // namespace oomlab::memory
