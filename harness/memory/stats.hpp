// Allocator statistics in PyTorch's vocabulary, each a {current, peak, total} counter.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

#include "harness/memory/tags.hpp"

namespace oomlab::memory {

struct Counter {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t total = 0;  // sum of all increases
  void increase(std::int64_t amount);
  void decrease(std::int64_t amount);
  void reset_peak() { peak = current; }
};

struct MemoryStats {
  Counter allocated;   // bytes in blocks handed out (rounded sizes)
  Counter reserved;    // bytes obtained from the source (segments, mapped pages)
  Counter active;      // allocated + blocks freed but waiting on another stream's events
  Counter requested;   // bytes callers asked for, before rounding
  Counter segments;    // number of segments (or mapped expandable ranges)
  Counter allocations; // number of live blocks
  std::uint64_t num_ooms = 0;
  std::uint64_t num_alloc_retries = 0;  // OOM retries after releasing cached segments
  std::uint64_t num_empty_cache = 0;
  std::size_t largest_free_block = 0;   // within reserved memory
  // 1 - largest_free_block / (reserved - allocated); 0 when nothing is free.
  double fragmentation = 0.0;
  std::array<Counter, kTagCount> tag_allocated{};  // indexed by Tag

  const Counter& tag(Tag t) const { return tag_allocated[static_cast<int>(t)]; }
  // The tag with the most live bytes now (current) or at its peak.
  Tag largest_tag_current() const;
  Tag largest_tag_peak() const;
};

}  // namespace oomlab::memory
