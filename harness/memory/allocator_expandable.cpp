// Expandable segments, as PyTorch makes them (Note [Expandable Segments] and
// find_expandable_block / map_block / try_allocate_expandable_block / unmap_block in
// c10/cuda/CUDACachingAllocator.cpp): one address range per (stream, pool), tiled by blocks that
// are mapped (allocated or cached) or unmapped (address space only). Pages are mapped and
// unmapped in granules of 2 MiB (small pool) or 20 MiB (large pool); a request maps at the lowest
// address with room, so unmapped holes fill first and the range stays one block where it can;
// releasing the cache unmaps every whole granule inside a free block, wherever it lies.
#include <algorithm>

#include "harness/memory/detail/allocator_impl.hpp"

namespace oomlab::memory {

using Block = detail::Block;
using Segment = detail::Segment;
using detail::round_up;

// PyTorch reserves 9/8 of the device's memory so unmapped holes never block growth at the end;
// oomlab's device is the budget (1 TiB when there is none).
std::size_t CachingAllocator::Impl::expandable_reservation(std::size_t granule) const {
  const std::size_t budget = config.budget;
  if (budget == AllocatorConfig::kUnlimited || budget >= detail::kExpandableReservation) {
    return round_up(detail::kExpandableReservation, granule);
  }
  return round_up(budget + budget / 8, granule);
}

// The lowest block (per stream) from which free and unmapped blocks together hold `size`, or a
// new range's single unmapped block.
Block* CachingAllocator::Impl::find_expandable_block(bool small, StreamHandle stream, std::size_t size) {
  BlockPool& pool = pool_for(small);
  const auto allocatable = [](const Block* b) { return b != nullptr && b->is_free() && b->stream_uses.empty(); };
  const auto has_room = [&](const Block* b) {
    std::size_t bytes = 0;
    for (; bytes < size && allocatable(b); b = b->next) bytes += b->size;
    return bytes >= size;
  };
  Block key;
  key.stream = stream;
  for (auto it = pool.unmapped.lower_bound(&key); it != pool.unmapped.end() && (*it)->stream == stream; ++it) {
    Block* candidate = *it;
    if (allocatable(candidate->prev)) candidate = candidate->prev;  // a free block just before the hole
    if (has_room(candidate)) return candidate;
  }
  // The source's pages must tile a granule; on every GPU so far they are 2 MiB.
  const std::size_t page = source.page_granularity();
  const std::size_t granule = round_up(small ? kSmallBuffer : kLargeBuffer, page);
  const std::size_t reservation = expandable_reservation(granule);
  if (reservation < size) return nullptr;
  void* base = source.reserve(reservation);
  if (base == nullptr) {
    source_refused = true;
    return nullptr;
  }
  Segment* seg = new_segment(small, stream, reinterpret_cast<std::uintptr_t>(base), 0);
  seg->expandable = true;
  seg->reservation = reservation;
  seg->granule = granule;
  Block* block = whole_block(seg, 0, reservation);
  block->mapped = false;
  seg->first = seg->last = block;
  pool.unmapped.insert(block);
  return block;
}

// Maps the granules that cover the first `size` bytes of the unmapped `to_map`; the mapped part
// joins its free neighbours and the cache.
bool CachingAllocator::Impl::map_block(Block* to_map, std::size_t size, Tag tag) {
  Segment* seg = to_map->segment;
  const std::size_t bytes = std::min(round_up(size, seg->granule), to_map->size);
  const std::size_t offset = to_map->offset;
  // A budget that is the device refuses pages past it, as cuMemCreate would; a fraction was
  // checked before (alloc_block) and lets whole granules pass it.
  if (!config.budget_is_fraction && !within_budget(bytes)) return false;
  if (!source.map(reinterpret_cast<void*>(seg->base + offset), bytes)) {
    source_refused = true;
    return false;
  }
  BlockPool& pool = pool_of(to_map);
  pool.unmapped.erase(to_map);
  to_map->mapped = true;
  if (bytes < to_map->size) {
    Block* rest = whole_block(seg, offset + bytes, to_map->size - bytes);
    rest->mapped = false;
    rest->prev = to_map;
    rest->next = to_map->next;
    if (to_map->next != nullptr) to_map->next->prev = rest;
    to_map->next = rest;
    if (seg->last == to_map) seg->last = rest;
    pool.unmapped.insert(rest);
    to_map->size = bytes;
  }
  try_merge(to_map, to_map->prev);
  try_merge(to_map, to_map->next);
  insert_free(to_map);
  seg->size += bytes;
  add_reserved(bytes, tag, seg->pool);
  record(EventKind::segment_map, bytes, seg->id, offset, tag, seg->stream);
  return true;
}

Block* CachingAllocator::Impl::try_allocate_expandable(bool small, StreamHandle stream, std::size_t size, Tag tag) {
  Block* candidate = find_expandable_block(small, stream, size);
  if (candidate == nullptr) return nullptr;
  // The candidate starts a run: unmapped, or free then unmapped, ... holding `size` bytes.
  if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size), tag)) return nullptr;
  while (candidate->size < size) {
    Block* next = candidate->next;  // unmapped: free mapped neighbours are already merged
    if (!map_block(next, std::min(size - candidate->size, next->size), tag)) return nullptr;
    candidate = next;  // map_block merged the candidate into it
  }
  pool_of(candidate).blocks.erase(candidate);
  return candidate;
}

// Unmaps every whole granule inside the free mapped `block`; the bytes before and after the
// granules stay cached as their own blocks.
void CachingAllocator::Impl::unmap_block(Block* block) {
  Segment* seg = block->segment;
  const std::size_t begin = round_up(block->offset, seg->granule);
  const std::size_t end = (block->offset + block->size) / seg->granule * seg->granule;
  if (begin >= end) return;
  BlockPool& pool = pool_of(block);
  pool.blocks.erase(block);
  if (begin > block->offset) {
    Block* before = whole_block(seg, block->offset, begin - block->offset);
    before->prev = block->prev;
    before->next = block;
    if (block->prev != nullptr) block->prev->next = before;
    if (seg->first == block) seg->first = before;
    block->prev = before;
    insert_free(before);
  }
  if (end < block->offset + block->size) {
    Block* after = whole_block(seg, end, block->offset + block->size - end);
    after->prev = block;
    after->next = block->next;
    if (block->next != nullptr) block->next->prev = after;
    if (seg->last == block) seg->last = after;
    block->next = after;
    insert_free(after);
  }
  block->address = seg->base + begin;
  block->offset = begin;
  block->size = end - begin;
  block->mapped = false;
  try_merge(block, block->prev);
  try_merge(block, block->next);
  pool.unmapped.insert(block);
  source.unmap(reinterpret_cast<void*>(seg->base + begin), end - begin);
  seg->size -= end - begin;
  remove_reserved(end - begin, seg->pool);
  record(EventKind::segment_unmap, end - begin, seg->id, begin, Tag::other, seg->stream);
}

// The range is one unmapped block again: give the address space back.
void CachingAllocator::Impl::release_expandable_segment(Block* block) {
  Segment* seg = block->segment;
  pool_of(block).unmapped.erase(block);
  source.release(reinterpret_cast<void*>(seg->base), seg->reservation);
  recycle(block);
  forget_segment(seg);
}

}  // namespace oomlab::memory
