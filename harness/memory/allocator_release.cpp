// Giving memory back to the source: record_stream's events, release_cached_blocks (empty_cache
// and the last retry of a request), release_available_cached_blocks (the oversize blocks, when
// max_split_size is set), garbage_collect_cached_blocks (garbage_collection_threshold), the
// uncached mode's immediate release, and the destructor's release of everything.
#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "harness/memory/detail/allocator_impl.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory {

using Block = detail::Block;
using Segment = detail::Segment;

// Completes what it can of the record_stream events; frees blocks whose events are all done.
void CachingAllocator::Impl::process_events() {
  if (pending.empty()) return;
  std::size_t kept = 0;
  for (auto& [event, block] : pending) {
    if (source.event_complete(event)) {
      source.destroy_event(event);
      if (--block->pending_events == 0) free_block(block);
    } else {
      pending[kept++] = {event, block};
    }
  }
  pending.resize(kept);
}

// Before returning memory to the source, wait for outstanding events (PyTorch synchronises).
void CachingAllocator::Impl::wait_for_events() {
  process_events();
  while (!pending.empty()) {
    std::this_thread::yield();
    process_events();
  }
}

// A cached block that is a whole ordinary segment: back to the source.
void CachingAllocator::Impl::release_block(Block* block) {
  Segment* seg = block->segment;
  pool_of(block).blocks.erase(block);
  source.deallocate(reinterpret_cast<void*>(seg->base), seg->size);
  remove_reserved(seg->size, seg->pool);
  record(EventKind::segment_unmap, seg->size, seg->id, 0, Tag::other, seg->stream);
  recycle(block);
  forget_segment(seg);
}

// release_blocks: every whole cached segment, in the pool's order (stream, size, position);
// then every whole free granule of the expandable ranges, and the ranges left empty.
// Only the releasable blocks are walked (the pool keeps them, in its order): a replay calls
// empty_cache() at every phase boundary with 100k split blocks cached.
void CachingAllocator::Impl::release_blocks(BlockPool& pool) {
  const std::vector<Block*> candidates(pool.blocks.releasable().begin(), pool.blocks.releasable().end());
  std::vector<Block*> to_unmap;
  for (Block* block : candidates) {
    if (block->segment->expandable) {
      to_unmap.push_back(block);  // unmapping changes the pool: after the walk
    } else if (!block->is_split()) {
      release_block(block);
    }
  }
  for (Block* block : to_unmap) {
    unmap_block(block);
    if (!block->mapped && !block->is_split()) release_expandable_segment(block);
  }
}

// release_cached_blocks: large pool first, then small, as PyTorch orders its segment_free events;
// then the private pools whose owners let go, each small first. The others keep their segments.
void CachingAllocator::Impl::release_cached() {
  wait_for_events();
  release_blocks(large_pool);
  release_blocks(small_pool);
  for (auto& [handle, pool] : private_pools) {
    if (!pool.freeable) continue;
    release_blocks(pool.small);
    release_blocks(pool.large);
  }
}

// A MemPool's destructor: the pool is let go and its own cache emptied at once.
void CachingAllocator::Impl::release_pool(PoolHandle handle) {
  const auto it = private_pools.find(handle);
  if (it == private_pools.end()) return;
  it->second.freeable = true;
  wait_for_events();
  release_blocks(it->second.small);
  release_blocks(it->second.large);
}

// release_available_cached_blocks (only with max_split_size): the smallest oversize block that
// covers the request, else the largest ones until their bytes would; returns whether enough was
// released to try again.
bool CachingAllocator::Impl::release_available_cached_blocks(bool small, StreamHandle stream, std::size_t size) {
  if (config.max_split_size == AllocatorConfig::kUnlimited) return false;
  BlockPool& pool = pool_for(small);
  // Oversize cached blocks are whole segments; the check keeps a simulation safe where PyTorch
  // would assert (an expandable block).
  const auto releasable = [](const Block* b) { return !b->segment->expandable && !b->is_split(); };
  Block key;
  key.stream = stream;
  key.size = std::max(size, config.max_split_size);
  auto it = pool.blocks.lower_bound(&key);
  if (it != pool.blocks.end() && (*it)->stream == stream) {
    if (!releasable(*it)) return false;
    release_block(*it);
    return true;
  }
  if (it == pool.blocks.begin()) return false;
  std::size_t released = 0;
  --it;  // the largest block of this stream, if it has any
  while (released < key.size && (*it)->size >= config.max_split_size && (*it)->stream == stream &&
         releasable(*it)) {
    Block* block = *it;
    released += block->size;
    const bool last = it == pool.blocks.begin();
    if (!last) --it;
    release_block(block);
    if (last) break;
  }
  return released >= key.size;
}

// garbage_collect_cached_blocks: once reserved passes threshold x budget, release whole cached
// large segments not reused for at least the average age (searches of the pool since they were
// cached), oldest rounds first, until reserved is back under the threshold or nothing is left.
void CachingAllocator::Impl::garbage_collect() {
  const auto threshold =
      static_cast<std::size_t>(config.garbage_collection_threshold * static_cast<double>(config.budget));
  const auto reserved = static_cast<std::size_t>(stats.reserved.current);
  if (reserved <= threshold) return;
  const std::size_t target = reserved - threshold;
  const auto freeable = [](const Block* b) { return !b->is_split() && !b->segment->expandable; };
  const auto age = [this](const Block* b) {
    return static_cast<std::size_t>(large_pool.free_block_searches - b->gc_count_base);
  };
  std::size_t total_age = 0;
  std::size_t candidates = 0;
  for (const Block* b : large_pool.blocks) {
    if (!freeable(b)) continue;
    total_age += age(b);
    ++candidates;
  }
  std::size_t reclaimed = 0;
  bool freed = true;
  while (reclaimed < target && freed && candidates > 0) {
    const double age_threshold = static_cast<double>(total_age) / static_cast<double>(candidates);
    freed = false;
    for (auto it = large_pool.blocks.begin(); it != large_pool.blocks.end();) {
      Block* block = *it++;
      if (!freeable(block) || static_cast<double>(age(block)) < age_threshold) continue;
      freed = true;
      reclaimed += block->size;
      total_age -= age(block);
      --candidates;
      release_block(block);
    }
  }
}

// caching:false: a freed block goes back to the source at once.
void CachingAllocator::Impl::release_uncached(Block* block) {
  Segment* seg = block->segment;
  stats.active.decrease(static_cast<std::int64_t>(block->size));
  source.deallocate(reinterpret_cast<void*>(seg->base), seg->size);
  remove_reserved(seg->size, seg->pool);
  record(EventKind::segment_unmap, seg->size, seg->id, 0, Tag::other, seg->stream);
  recycle(block);
  forget_segment(seg);
}

// Destructor work: everything back to the source, whatever state it is in.
void CachingAllocator::Impl::release_everything() {
  for (auto& [event, block] : pending) {
    source.destroy_event(event);
    block->pending_events = 0;
  }
  pending.clear();
  if (!live.empty()) {
    std::size_t bytes = 0;
    for (auto& [address, block] : live) bytes += block->size;
    std::fprintf(stderr, "oomlab: CachingAllocator destroyed with %zu live blocks (%s) on %s\n",
                 live.size(), format_size(bytes).c_str(), source.name().c_str());
  }
  for (auto& [id, seg] : segments) {
    if (seg->expandable) {
      // Pages go back by runs of mapped blocks: a run starts and ends on granule edges.
      std::uintptr_t run_start = 0;
      std::size_t run_bytes = 0;
      for (const Block* b = seg->first; b != nullptr; b = b->next) {
        if (b->mapped) {
          if (run_bytes == 0) run_start = b->address;
          run_bytes += b->size;
        }
        if ((!b->mapped || b->next == nullptr) && run_bytes > 0) {
          source.unmap(reinterpret_cast<void*>(run_start), run_bytes);
          run_bytes = 0;
        }
      }
      source.release(reinterpret_cast<void*>(seg->base), seg->reservation);
    } else {
      source.deallocate(reinterpret_cast<void*>(seg->base), seg->size);
    }
    for (Block* b = seg->first; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
    delete seg;
  }
  segments.clear();
  for (Block* b : spare_blocks) delete b;
  spare_blocks.clear();
}

}  // namespace oomlab::memory
