// Blocks and segments: the pools, best fit, splitting, merging, freeing, new segments, and the
// uncached mode. PyTorch's get_free_block / should_split / alloc_found_block / try_merge_blocks /
// free_block / alloc_block (c10/cuda/CUDACachingAllocator.cpp).
#include <iterator>

#include "harness/memory/detail/allocator_impl.hpp"

namespace oomlab::memory {

using Block = detail::Block;
using Segment = detail::Segment;

Block* CachingAllocator::Impl::new_block() {
  if (spare_blocks.empty()) return new Block();
  Block* b = spare_blocks.back();
  spare_blocks.pop_back();
  *b = Block();
  return b;
}

// insert_into_blocks: the garbage collector ages a cached block by the free-block searches of
// its pool since it entered the pool.
void CachingAllocator::Impl::insert_free(Block* b) {
  BlockPool& pool = pool_of(b);
  b->gc_count_base = pool.free_block_searches;
  pool.blocks.insert(b);
}

CachingAllocator::Impl::BlockPool& CachingAllocator::Impl::pool_in(PoolHandle pool, bool small) {
  if (pool == kDefaultPool) return small ? small_pool : large_pool;
  detail::PrivatePool& owner = private_pools.try_emplace(pool, config.ties_by_address).first->second;
  return small ? owner.small : owner.large;
}

Block* CachingAllocator::Impl::get_free_block(bool small, StreamHandle stream, std::size_t size) {
  BlockPool& pool = pool_for(small);
  if (gc_on()) ++pool.free_block_searches;
  Block key;
  key.stream = stream;
  key.size = size;
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
  if ((*it)->segment->expandable) {
    if (expandable_on()) {
      // A block followed by unmapped space can grow that far: best fit compares what each
      // block could become, so the tail of a range is kept for requests nothing else holds.
      const auto expandable_size = [](const Block* b) {
        return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
      };
      auto next = std::next(it);
      while ((*it)->segment->expandable && next != pool.blocks.end() && (*next)->stream == stream &&
             expandable_size(*next) < expandable_size(*it)) {
        it = next++;
      }
    } else {
      // Expandable segments switched off after some were made: only ordinary blocks serve.
      do {
        ++it;
      } while (it != pool.blocks.end() && (*it)->segment->expandable && (*it)->stream == stream);
      if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
    }
  }
  const Block* block = *it;
  // max_split_size keeps big cached blocks for big requests, and a big request takes an
  // oversize block only when it wastes less than max_non_split_rounding.
  if (size < config.max_split_size && block->size >= config.max_split_size) return nullptr;
  if (size >= config.max_split_size && block->size >= size + config.max_non_split_rounding) return nullptr;
  Block* found = *it;
  pool.blocks.erase(it);
  return found;
}

bool CachingAllocator::Impl::should_split(const Block* block, std::size_t size) const {
  const std::size_t remaining = block->size - size;
  if (block->segment->small || expandable_on()) return remaining >= kMinBlockSize;
  return size < config.max_split_size && remaining > kSmallSize;
}

// `block` is out of any pool; gives it `size` bytes and returns the remainder to the pool.
void CachingAllocator::Impl::split(Block* block, std::size_t size) {
  Block* rest = new_block();
  rest->address = block->address + size;
  rest->size = block->size - size;
  rest->stream = block->stream;
  rest->segment = block->segment;
  rest->segment_id = block->segment_id;
  rest->offset = block->offset + size;
  rest->prev = block;
  rest->next = block->next;
  if (block->next != nullptr) block->next->prev = rest;
  block->next = rest;
  if (block->segment->last == block) block->segment->last = rest;
  block->size = size;
  insert_free(rest);
}

// Absorbs the neighbour `from` into `into` when it is free and mapped alike; returns the bytes
// absorbed (0: not merged).
std::size_t CachingAllocator::Impl::try_merge(Block* into, Block* from) {
  if (from == nullptr || !from->is_free() || !from->stream_uses.empty() || from->mapped != into->mapped) return 0;
  BlockPool& pool = pool_of(from);
  if (from->mapped) {
    pool.blocks.erase(from);
  } else {
    pool.unmapped.erase(from);
  }
  Segment* seg = into->segment;
  if (from == into->next) {
    into->next = from->next;
    if (from->next != nullptr) from->next->prev = into;
    if (seg->last == from) seg->last = into;
  } else {  // from == into->prev
    into->address = from->address;
    into->offset = from->offset;
    into->prev = from->prev;
    if (from->prev != nullptr) from->prev->next = into;
    if (seg->first == from) seg->first = into;
  }
  const std::size_t absorbed = from->size;
  into->size += absorbed;
  recycle(from);
  return absorbed;
}

// A block is really free (no pending events): coalesce and return it to its pool.
void CachingAllocator::Impl::free_block(Block* block) {
  stats.active.decrease(static_cast<std::int64_t>(block->size));
  try_merge(block, block->prev);
  try_merge(block, block->next);
  insert_free(block);
}

Segment* CachingAllocator::Impl::new_segment(bool small, StreamHandle stream, std::uintptr_t base, std::size_t size) {
  auto* seg = new Segment();
  seg->id = next_segment_id++;
  seg->base = base;
  seg->size = size;
  seg->small = small;
  seg->stream = stream;
  seg->pool = request_pool;
  segments[seg->id] = seg;
  stats.segments.increase(1);
  return seg;
}

Block* CachingAllocator::Impl::whole_block(Segment* seg, std::size_t offset, std::size_t size) {
  Block* b = new_block();
  b->address = seg->base + offset;
  b->size = size;
  b->stream = seg->stream;
  b->segment = seg;
  b->segment_id = seg->id;
  b->offset = offset;
  return b;
}

// alloc_block. Under a memory fraction PyTorch checks the segment an ordinary request would get,
// also when expandable segments then map something else; the device refuses what it maps.
Block* CachingAllocator::Impl::alloc_block(bool small, StreamHandle stream, std::size_t size, Tag tag) {
  const std::size_t bytes = allocation_size(size);
  if (config.budget_is_fraction && !within_budget(bytes)) return nullptr;
  if (expandable_on()) return try_allocate_expandable(small, stream, size, tag);
  if (!within_budget(bytes)) return nullptr;
  return grow_segment(small, stream, bytes, tag);
}

Block* CachingAllocator::Impl::grow_segment(bool small, StreamHandle stream, std::size_t bytes, Tag tag) {
  void* ptr = source.allocate(bytes);
  if (ptr == nullptr) {
    source_refused = true;
    return nullptr;
  }
  Segment* seg = new_segment(small, stream, reinterpret_cast<std::uintptr_t>(ptr), bytes);
  Block* block = whole_block(seg, 0, bytes);
  seg->first = seg->last = block;
  add_reserved(bytes, tag, seg->pool);
  record(EventKind::segment_map, bytes, seg->id, 0, tag, stream);
  return block;
}

// caching:false (PYTORCH_NO_CUDA_MEMORY_CACHING): the request is its own segment, nothing is
// cached, so there is nothing to release and retry either.
Block* CachingAllocator::Impl::allocate_uncached(std::size_t size, StreamHandle stream, Tag tag) {
  if (!within_budget(size)) return nullptr;
  Block* block = grow_segment(size <= kSmallSize, stream, size, tag);
  if (block != nullptr) block->segment->uncached = true;
  return block;
}

void CachingAllocator::Impl::forget_segment(Segment* seg) {
  segments.erase(seg->id);
  stats.segments.decrease(1);
  delete seg;
}

}  // namespace oomlab::memory
