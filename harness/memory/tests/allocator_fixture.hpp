// A caching allocator over a dry source, for the rule tests: dry is exact and instant.
#pragma once
#include <memory>
#include <vector>

#include "harness/memory/caching_allocator.hpp"

namespace oomlab::memory::testing {

struct DryAllocator {
  explicit DryAllocator(AllocatorConfig config = {}) : allocator(*source, config) {}
  std::unique_ptr<MemorySource> source = make_dry_source();
  CachingAllocator allocator;

  MemoryStats stats() const { return allocator.stats(); }
  std::size_t count(EventKind kind) const {
    std::size_t n = 0;
    for (const TraceEvent& e : allocator.trace().events()) n += e.kind == kind;
    return n;
  }
  // The bytes of each event of `kind`, in order (segment_map, segment_unmap: what the source saw).
  std::vector<std::size_t> sizes(EventKind kind) const {
    std::vector<std::size_t> out;
    for (const TraceEvent& e : allocator.trace().events()) {
      if (e.kind == kind) out.push_back(e.bytes);
    }
    return out;
  }
};

inline AllocatorConfig with_budget(std::size_t budget) {
  AllocatorConfig config;
  config.budget = budget;
  return config;
}

// with_budget(budget) and one setting changed, for the tests of that setting:
// with_setting(&AllocatorConfig::caching, false).
template <class T>
AllocatorConfig with_setting(T AllocatorConfig::*setting, T value,
                             std::size_t budget = AllocatorConfig::kUnlimited) {
  AllocatorConfig config = with_budget(budget);
  config.*setting = value;
  return config;
}

}  // namespace oomlab::memory::testing
