// Counters in PyTorch's {current, peak, total} form.
#include "harness/memory/stats.hpp"

#include <algorithm>

namespace oomlab::memory {

void Counter::increase(std::int64_t amount) {
  current += amount;
  total += amount;
  peak = std::max(peak, current);
}

void Counter::decrease(std::int64_t amount) { current -= amount; }

namespace {
template <typename Value>
Tag largest_tag_by(const std::array<Counter, kTagCount>& tags, Value value) {
  Tag best = Tag::other;
  std::int64_t best_bytes = -1;
  for (Tag tag : all_tags()) {
    std::int64_t bytes = value(tags[static_cast<int>(tag)]);
    if (bytes > best_bytes) {
      best = tag;
      best_bytes = bytes;
    }
  }
  return best;
}
}  // namespace

Tag MemoryStats::largest_tag_current() const {
  return largest_tag_by(tag_allocated, [](const Counter& c) { return c.current; });
}

Tag MemoryStats::largest_tag_peak() const {
  return largest_tag_by(tag_allocated, [](const Counter& c) { return c.peak; });
}

}  // namespace oomlab::memory
