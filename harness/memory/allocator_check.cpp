// The allocator's structural self-check (check_consistency: tests and the fuzzer): every segment
// tiled by its blocks, free neighbours coalesced, each block in exactly one place (the live map,
// waiting on events, its pool, or the unmapped set), and the statistics equal to what the blocks
// add up to. O(blocks).
#include "harness/memory/detail/allocator_impl.hpp"

namespace oomlab::memory {

using Block = detail::Block;
using Segment = detail::Segment;

std::string CachingAllocator::Impl::first_inconsistency() const {
  Tally tally;
  for (const auto& [id, seg] : segments) {
    std::string broken = check_segment(id, *seg, tally);
    if (!broken.empty()) return broken;
  }
  return check_totals(tally);
}

std::string CachingAllocator::Impl::check_segment(std::uint32_t id, const Segment& seg, Tally& tally) const {
  const std::string where = "segment " + std::to_string(id);
  if (seg.id != id) return where + ": filed under the wrong id";
  // An expandable range may hold no pages (its first map failed, as PyTorch keeps it).
  if ((seg.size == 0 && !seg.expandable) || seg.first == nullptr) return where + ": empty but still held";
  if (seg.expandable && (seg.granule == 0 || seg.reservation % seg.granule != 0)) {
    return where + ": reservation not a whole number of granules";
  }
  if (seg.first->prev != nullptr) return where + ": first block has a predecessor";
  const std::size_t extent = seg.expandable ? seg.reservation : seg.size;
  std::size_t end = 0;
  std::size_t mapped = 0;
  const Block* last = nullptr;
  for (const Block* b = seg.first; b != nullptr; last = b, b = b->next) {
    const std::string block = where + " block at offset " + std::to_string(b->offset) + ": ";
    if (b->segment != &seg || b->segment_id != id || b->stream != seg.stream) return block + "wrong owner";
    if (b->offset != end || b->address != seg.base + b->offset) return block + "gap or overlap";
    if (b->size == 0 || b->size % kMinBlockSize != 0) return block + "size not a multiple of 512";
    if (b->next != nullptr && b->next->prev != b) return block + "broken back link";
    if (seg.uncached && (b != seg.first || b->next != nullptr || !b->allocated)) {
      return block + "an uncached segment holds one allocated block";
    }
    std::string state = check_block_state(*b, tally);
    if (!state.empty()) return block + state;
    if (b->next != nullptr && b->is_free() && b->next->is_free() && b->mapped == b->next->mapped) {
      return block + (b->mapped ? "free neighbours not coalesced" : "unmapped neighbours not coalesced");
    }
    if (b->mapped) {
      mapped += b->size;
    } else if (b->offset % seg.granule != 0 || b->size % seg.granule != 0) {
      return block + "unmapped space off the granule grid";
    }
    end += b->size;
  }
  if (last != seg.last) return where + ": last block pointer is stale";
  if (end != extent) {
    return where + ": blocks cover " + std::to_string(end) + " of " + std::to_string(extent) + " bytes";
  }
  if (seg.expandable && mapped != seg.size) return where + ": mapped blocks differ from the mapped bytes";
  tally.reserved += seg.size;
  return "";
}

// A block is exactly one of: allocated (in `live`), waiting on events, free (in its pool), or
// unmapped (in its pool's unmapped set).
std::string CachingAllocator::Impl::check_block_state(const Block& b, Tally& tally) const {
  const BlockPool& pool = const_cast<Impl*>(this)->pool_of(&b);
  auto* key = const_cast<Block*>(&b);
  auto pooled = pool.blocks.find(key);
  const bool in_pool = pooled != pool.blocks.end() && *pooled == &b;
  auto hole = pool.unmapped.find(key);
  const bool in_unmapped = hole != pool.unmapped.end() && *hole == &b;
  auto found = live.find(b.address);
  const bool in_live = found != live.end() && found->second == &b;
  if (!b.mapped) {
    if (b.allocated || b.pending_events != 0 || in_live || in_pool || !in_unmapped) {
      return "unmapped but not exactly in the unmapped set";
    }
    ++tally.unmapped_blocks;
  } else if (b.allocated) {
    if (!in_live || in_pool || in_unmapped || b.pending_events != 0) return "allocated but not exactly in the live map";
    ++tally.allocated_blocks;
    tally.allocated += b.size;
    tally.active += b.size;
    tally.requested += b.requested;
    tally.tag_allocated[static_cast<int>(b.tag)] += b.size;
  } else if (b.pending_events > 0) {
    if (in_live || in_pool || in_unmapped) return "waiting on events but reachable";
    tally.active += b.size;
    tally.pending_events += static_cast<std::size_t>(b.pending_events);
  } else {
    if (in_live || !in_pool || in_unmapped) return "free but not exactly in its pool";
    ++tally.free_blocks;
  }
  return "";
}

std::string CachingAllocator::Impl::check_totals(const Tally& tally) const {
  auto differs = [](std::int64_t counter, std::size_t walked) {
    return counter < 0 || static_cast<std::size_t>(counter) != walked;
  };
  std::vector<const BlockPool*> pools = {&small_pool, &large_pool};
  for (const auto& [handle, pool] : private_pools) pools.insert(pools.end(), {&pool.small, &pool.large});
  std::size_t pooled = 0, unmapped = 0;
  for (const BlockPool* pool : pools) {
    pooled += pool->blocks.size();
    unmapped += pool->unmapped.size();
  }
  if (tally.free_blocks != pooled) return "a pool holds blocks no segment has";
  for (const BlockPool* pool : pools) {
    const std::string disagreement = pool->blocks.first_disagreement();
    if (!disagreement.empty()) return disagreement;
  }
  if (tally.unmapped_blocks != unmapped) {
    return "an unmapped set holds blocks no segment has";
  }
  if (tally.allocated_blocks != live.size()) return "the live map holds blocks no segment has";
  if (tally.pending_events != pending.size()) return "pending events do not match the blocks waiting";
  if (static_cast<std::size_t>(stats.segments.current) != segments.size()) return "segment count is off";
  if (differs(stats.reserved.current, tally.reserved)) return "reserved bytes differ from the segments";
  if (differs(stats.allocated.current, tally.allocated)) return "allocated bytes differ from the blocks";
  if (differs(stats.active.current, tally.active)) return "active bytes differ from the blocks";
  if (differs(stats.requested.current, tally.requested)) return "requested bytes differ from the blocks";
  if (differs(stats.allocations.current, tally.allocated_blocks)) return "allocation count is off";
  for (Tag t : all_tags()) {
    if (differs(stats.tag(t).current, tally.tag_allocated[static_cast<int>(t)])) {
      return std::string("tag ") + tag_name(t) + " bytes differ from the blocks";
    }
  }
  // A fraction lets expandable segments map up to one granule (< 20 MiB) past it.
  const std::size_t overshoot = config.budget_is_fraction ? kLargeBuffer : 0;
  if (config.budget != AllocatorConfig::kUnlimited &&
      !detail::fits_under(tally.reserved, config.simulated_external, config.budget + overshoot)) {
    return "reserved + simulated external exceeds the budget";
  }
  return "";
}

std::string detail::FreeBlocks::first_disagreement() const {
  std::multiset<std::size_t> sizes;
  std::size_t releasable = 0;
  for (Block* b : blocks_) {
    sizes.insert(b->size);
    const bool can_release = b->segment->expandable || !b->is_split();
    if (can_release != (releasable_.count(b) == 1)) return "a pool's releasable set disagrees with its blocks";
    releasable += can_release ? 1 : 0;
  }
  if (sizes != sizes_) return "a pool's free sizes disagree with its blocks";
  if (releasable != releasable_.size()) return "a pool's releasable set holds blocks it does not";
  return "";
}

}  // namespace oomlab::memory
