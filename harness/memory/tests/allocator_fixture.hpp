// A caching allocator over a dry source, for the rule tests: dry is exact and instant.
#pragma once
#include <memory>

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
};

inline AllocatorConfig with_budget(std::size_t budget) {
  AllocatorConfig config;
  config.budget = budget;
  return config;
}

}  // namespace oomlab::memory::testing
