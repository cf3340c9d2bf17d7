// The caching allocator. Follows PyTorch's CUDACachingAllocator (c10/cuda/CUDACachingAllocator.cpp)
// rule for rule; the header lists the rules. Two deliberate differences, both for determinism:
//  - best fit breaks ties by (segment id, offset) instead of the raw address, so host, dry and
//    cuda make the same choices and their traces are identical;
//  - the budget caps reserved + simulated_external only. Device memory used outside the
//    allocator on cuda (this process's context, other processes) is not charged against it,
//    because a GPU profile's budget already subtracts one context: an H200 capped at a 12 GiB
//    profile then fails exactly where the 12 GiB card fails. Real external use still shows up
//    when the device itself refuses, and the OOM diagnosis reports it.
#include "harness/memory/caching_allocator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/memory/budget.hpp"
#include "harness/memory/site.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory {
namespace {

constexpr std::size_t kMinBlockSize = 512;        // every request rounds up to this
constexpr std::size_t kSmallSize = 1 * MiB;       // largest request of the small pool
constexpr std::size_t kSmallBuffer = 2 * MiB;     // small pool segment
constexpr std::size_t kLargeBuffer = 20 * MiB;    // large pool segment for requests < kMinLargeAlloc
constexpr std::size_t kMinLargeAlloc = 10 * MiB;
constexpr std::size_t kRoundLarge = 2 * MiB;      // larger segments round up to this
constexpr std::size_t kMaxRequest = std::size_t{1} << 62;  // beyond this no budget can hold it
constexpr std::size_t kExpandableReservation = std::size_t{1} << 40;  // 1 TiB of address space

std::size_t round_up(std::size_t bytes, std::size_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

std::size_t round_size(std::size_t bytes) {
  return bytes < kMinBlockSize ? kMinBlockSize : round_up(bytes, kMinBlockSize);
}

std::size_t segment_size_for(std::size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return round_up(size, kRoundLarge);
}

struct Segment;

struct Block {
  std::uintptr_t address = 0;
  std::size_t size = 0;          // rounded bytes
  std::size_t requested = 0;     // bytes asked for (live blocks)
  StreamHandle stream = 0;
  std::uint32_t segment_id = 0;  // copied from segment for the pool ordering
  std::size_t offset = 0;        // within the segment
  Segment* segment = nullptr;
  Block* prev = nullptr;         // neighbours within the segment
  Block* next = nullptr;
  bool allocated = false;
  Tag tag = Tag::other;
  int pending_events = 0;        // events that must complete before the block is free
  std::vector<StreamHandle> stream_uses;  // other streams it was used on (record_stream)

  bool is_free() const { return !allocated && pending_events == 0; }
};

struct Segment {
  std::uint32_t id = 0;
  std::uintptr_t base = 0;
  std::size_t size = 0;          // bytes reserved from the source (mapped part if expandable)
  std::size_t reservation = 0;   // address range reserved (expandable only)
  bool expandable = false;
  bool small = false;
  StreamHandle stream = 0;
  Block* first = nullptr;
  Block* last = nullptr;
};

// Best fit: (stream, size), ties by position.
struct BlockLess {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    if (a->segment_id != b->segment_id) return a->segment_id < b->segment_id;
    return a->offset < b->offset;
  }
};
using BlockPool = std::set<Block*, BlockLess>;

bool fits_under(std::size_t used, std::size_t extra, std::size_t limit) {
  return used <= limit && extra <= limit - used;
}

}  // namespace

struct CachingAllocator::Impl {
  Impl(MemorySource& source, const AllocatorConfig& config, Trace& trace)
      : source(source), config(config), trace(trace), start(std::chrono::steady_clock::now()) {
    live.reserve(1024);
  }

  MemorySource& source;
  const AllocatorConfig& config;
  Trace& trace;
  std::chrono::steady_clock::time_point start;

  BlockPool small_pool, large_pool;
  std::unordered_map<std::uintptr_t, Block*> live;
  std::map<std::uint32_t, Segment*> segments;  // by id: deterministic release order
  std::map<std::pair<StreamHandle, bool>, Segment*> expandable;  // (stream, small) -> range
  std::vector<std::pair<EventHandle, Block*>> pending;  // record_stream events
  std::vector<Block*> spare_blocks;  // recycled Block objects: no heap traffic on the hot path
  std::uint32_t next_segment_id = 0;
  MemoryStats stats;
  std::vector<ScopeStats> scopes;
  bool source_refused = false;  // the last growth failed in the source, not at the budget

  // ---- blocks ----
  Block* new_block() {
    if (spare_blocks.empty()) return new Block();
    Block* b = spare_blocks.back();
    spare_blocks.pop_back();
    *b = Block();
    return b;
  }
  void recycle(Block* b) { spare_blocks.push_back(b); }
  BlockPool& pool_of(const Block* b) { return b->segment->small ? small_pool : large_pool; }

  // ---- trace and statistics ----
  void record(EventKind kind, std::size_t bytes, std::uint32_t segment, std::size_t offset, Tag tag,
              StreamHandle stream, std::int64_t step = -1) {
    TraceEvent e;
    e.kind = kind;
    e.time_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    e.bytes = bytes;
    e.segment = segment;
    e.offset = offset;
    e.tag = tag;
    e.stream = stream;
    e.step = step;
    e.allocated_after = stats.allocated.current;
    e.reserved_after = stats.reserved.current;
    trace.record(e);
  }
  void update_scopes(Tag tag) {
    for (ScopeStats& scope : scopes) {
      scope.peak_allocated = std::max(scope.peak_allocated, stats.allocated.current);
      scope.peak_reserved = std::max(scope.peak_reserved, stats.reserved.current);
      auto& tag_peak = scope.peak_tag_allocated[static_cast<int>(tag)];
      tag_peak = std::max(tag_peak, stats.tag(tag).current);
    }
  }
  void add_reserved(std::size_t bytes, Tag tag) {
    stats.reserved.increase(static_cast<std::int64_t>(bytes));
    update_scopes(tag);
  }
  std::size_t largest_free_block() const {
    std::size_t largest = 0;
    for (const BlockPool* pool : {&small_pool, &large_pool}) {
      for (const Block* b : *pool) largest = std::max(largest, b->size);
    }
    return largest;
  }

  bool within_budget(std::size_t extra) const {
    if (config.budget == AllocatorConfig::kUnlimited) return true;
    std::size_t used = static_cast<std::size_t>(stats.reserved.current);
    return fits_under(used, config.simulated_external, config.budget) &&
           fits_under(used + config.simulated_external, extra, config.budget);
  }

  // ---- finding and shaping blocks ----
  Block* find_free_block(bool small, StreamHandle stream, std::size_t size) {
    BlockPool& pool = small ? small_pool : large_pool;
    Block key;
    key.stream = stream;
    key.size = size;
    auto it = pool.lower_bound(&key);
    if (it == pool.end() || (*it)->stream != stream) return nullptr;
    Block* block = *it;
    // max_split_size keeps big cached blocks for big requests. Expandable ranges are exempt:
    // their free space always coalesces, so splitting them fragments nothing.
    if (config.max_split_size != AllocatorConfig::kUnlimited && !block->segment->expandable) {
      if (size < config.max_split_size && block->size >= config.max_split_size) return nullptr;
      if (size >= config.max_split_size && block->size >= size + kLargeBuffer) return nullptr;
    }
    pool.erase(it);
    return block;
  }

  bool should_split(const Block* block, std::size_t size) const {
    std::size_t remaining = block->size - size;
    if (block->segment->small || block->segment->expandable) return remaining >= kMinBlockSize;
    return size < config.max_split_size && remaining > kSmallSize;
  }

  // `block` is out of any pool; gives it `size` bytes and returns the remainder to the pool.
  void split(Block* block, std::size_t size) {
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
    pool_of(rest).insert(rest);
  }

  // Absorbs the free block `from` (a neighbour) into `into`.
  void merge(Block* into, Block* from) {
    pool_of(from).erase(from);
    if (from == into->next) {
      into->next = from->next;
      if (from->next != nullptr) from->next->prev = into;
      if (into->segment->last == from) into->segment->last = into;
    } else {  // from == into->prev
      into->address = from->address;
      into->offset = from->offset;
      into->prev = from->prev;
      if (from->prev != nullptr) from->prev->next = into;
      if (into->segment->first == from) into->segment->first = into;
    }
    into->size += from->size;
    recycle(from);
  }

  // A block is really free (no pending events): coalesce and return it to its pool.
  void free_block(Block* block) {
    stats.active.decrease(static_cast<std::int64_t>(block->size));
    if (block->prev != nullptr && block->prev->is_free()) merge(block, block->prev);
    if (block->next != nullptr && block->next->is_free()) merge(block, block->next);
    pool_of(block).insert(block);
  }

  // ---- growing ----
  Segment* new_segment(bool small, StreamHandle stream, std::uintptr_t base, std::size_t size) {
    auto* seg = new Segment();
    seg->id = next_segment_id++;
    seg->base = base;
    seg->size = size;
    seg->small = small;
    seg->stream = stream;
    segments[seg->id] = seg;
    stats.segments.increase(1);
    return seg;
  }
  Block* whole_block(Segment* seg, std::size_t offset, std::size_t size) {
    Block* b = new_block();
    b->address = seg->base + offset;
    b->size = size;
    b->stream = seg->stream;
    b->segment = seg;
    b->segment_id = seg->id;
    b->offset = offset;
    return b;
  }

  Block* grow_segment(bool small, StreamHandle stream, std::size_t size, Tag tag) {
    std::size_t bytes = segment_size_for(size);
    if (!within_budget(bytes)) return nullptr;
    void* ptr = source.allocate(bytes);
    if (ptr == nullptr) {
      source_refused = true;
      return nullptr;
    }
    Segment* seg = new_segment(small, stream, reinterpret_cast<std::uintptr_t>(ptr), bytes);
    Block* block = whole_block(seg, 0, bytes);
    seg->first = seg->last = block;
    add_reserved(bytes, tag);
    record(EventKind::segment_map, bytes, seg->id, 0, tag, stream);
    return block;
  }

  std::size_t expandable_reservation() const {
    std::size_t granularity = source.page_granularity();
    if (config.budget == AllocatorConfig::kUnlimited || config.budget >= kExpandableReservation) {
      return kExpandableReservation;
    }
    return round_up(config.budget, granularity);
  }

  // Maps enough pages at the end of the (stream, pool) range that its free tail holds `size`.
  Block* grow_expandable(bool small, StreamHandle stream, std::size_t size, Tag tag) {
    std::size_t granularity = source.page_granularity();
    Segment*& seg = expandable[{stream, small}];
    if (seg == nullptr) {
      std::size_t reservation = expandable_reservation();
      void* base = source.reserve(reservation);
      if (base == nullptr) {
        expandable.erase({stream, small});
        source_refused = true;
        return nullptr;
      }
      seg = new_segment(small, stream, reinterpret_cast<std::uintptr_t>(base), 0);
      seg->expandable = true;
      seg->reservation = reservation;
    }
    Block* tail = seg->last != nullptr && seg->last->is_free() ? seg->last : nullptr;
    std::size_t tail_free = tail != nullptr ? tail->size : 0;
    if (tail_free >= size) {
      pool_of(tail).erase(tail);
      return tail;
    }
    std::size_t grow = round_up(size - tail_free, granularity);
    bool mapped = grow <= seg->reservation - seg->size && within_budget(grow);
    if (mapped) {
      mapped = source.map(reinterpret_cast<void*>(seg->base + seg->size), grow);
      if (!mapped) source_refused = true;
    }
    if (!mapped) {
      if (seg->size == 0) release_expandable(seg);
      return nullptr;
    }
    std::size_t old_end = seg->size;
    seg->size += grow;
    add_reserved(grow, tag);
    record(EventKind::segment_map, grow, seg->id, old_end, tag, stream);
    if (tail != nullptr) {
      pool_of(tail).erase(tail);
      tail->size += grow;
      return tail;
    }
    Block* block = whole_block(seg, old_end, grow);
    block->prev = seg->last;
    if (seg->last != nullptr) seg->last->next = block;
    if (seg->first == nullptr) seg->first = block;
    seg->last = block;
    return block;
  }

  Block* grow(bool small, StreamHandle stream, std::size_t size, Tag tag) {
    if (config.expandable_segments && source.supports_expandable()) {
      return grow_expandable(small, stream, size, tag);
    }
    return grow_segment(small, stream, size, tag);
  }

  // ---- releasing ----
  void release_expandable(Segment* seg) {
    source.release(reinterpret_cast<void*>(seg->base), seg->reservation);
    expandable.erase({seg->stream, seg->small});
    forget_segment(seg);
  }
  void forget_segment(Segment* seg) {
    segments.erase(seg->id);
    stats.segments.decrease(1);
    delete seg;
  }

  // Unmaps the pages of the free tail of an expandable range; releases the range when empty.
  void trim_expandable(Segment* seg) {
    Block* last = seg->last;
    if (last == nullptr || !last->is_free()) return;
    std::size_t granularity = source.page_granularity();
    std::size_t keep = round_up(last->offset, granularity);
    if (keep >= seg->size) return;
    std::size_t bytes = seg->size - keep;
    source.unmap(reinterpret_cast<void*>(seg->base + keep), bytes);
    pool_of(last).erase(last);
    if (keep == last->offset) {
      seg->last = last->prev;
      if (last->prev != nullptr) last->prev->next = nullptr;
      if (seg->first == last) seg->first = nullptr;
      recycle(last);
    } else {
      last->size = keep - last->offset;
      pool_of(last).insert(last);
    }
    seg->size = keep;
    stats.reserved.decrease(static_cast<std::int64_t>(bytes));
    record(EventKind::segment_unmap, bytes, seg->id, keep, Tag::other, seg->stream);
    if (seg->size == 0) release_expandable(seg);
  }

  // Completes what it can of the record_stream events; frees blocks whose events are all done.
  void process_events() {
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
  void wait_for_events() {
    process_events();
    while (!pending.empty()) {
      std::this_thread::yield();
      process_events();
    }
  }

  // Returns every fully free segment and every free expandable tail to the source.
  void release_cached() {
    wait_for_events();
    std::vector<Segment*> all;
    for (auto& [id, seg] : segments) all.push_back(seg);
    for (Segment* seg : all) {
      if (seg->expandable) {
        trim_expandable(seg);
        continue;
      }
      Block* block = seg->first;
      if (!block->is_free() || block->next != nullptr) continue;
      pool_of(block).erase(block);
      source.deallocate(reinterpret_cast<void*>(seg->base), seg->size);
      stats.reserved.decrease(static_cast<std::int64_t>(seg->size));
      record(EventKind::segment_unmap, seg->size, seg->id, 0, Tag::other, seg->stream);
      recycle(block);
      forget_segment(seg);
    }
  }

  // ---- self-check (tests and the fuzzer) ----
  // What the block walk saw, to compare with the pools, the live map and the statistics.
  struct Tally {
    std::size_t reserved = 0, allocated = 0, active = 0, requested = 0;
    std::size_t free_blocks = 0, allocated_blocks = 0, pending_events = 0;
    std::array<std::size_t, kTagCount> tag_allocated{};
  };

  // Walks every segment's block list: O(blocks). Returns the first broken invariant, or "".
  std::string first_inconsistency() const {
    Tally tally;
    for (const auto& [id, seg] : segments) {
      std::string broken = check_segment(id, *seg, tally);
      if (!broken.empty()) return broken;
    }
    return check_totals(tally);
  }

  std::string check_segment(std::uint32_t id, const Segment& seg, Tally& tally) const {
    const std::string where = "segment " + std::to_string(id);
    if (seg.id != id) return where + ": filed under the wrong id";
    if (seg.size == 0 || seg.first == nullptr) return where + ": empty but still held";
    if (seg.expandable) {
      if (seg.size > seg.reservation) return where + ": maps more than its reservation";
      auto range = expandable.find({seg.stream, seg.small});
      if (range == expandable.end() || range->second != &seg) {
        return where + ": expandable range not indexed";
      }
    }
    if (seg.first->prev != nullptr) return where + ": first block has a predecessor";
    std::size_t end = 0;
    const Block* last = nullptr;
    for (const Block* b = seg.first; b != nullptr; last = b, b = b->next) {
      const std::string block = where + " block at offset " + std::to_string(b->offset) + ": ";
      if (b->segment != &seg || b->segment_id != id || b->stream != seg.stream) {
        return block + "wrong owner";
      }
      if (b->offset != end || b->address != seg.base + b->offset) return block + "gap or overlap";
      if (b->size == 0 || b->size % kMinBlockSize != 0) return block + "size not a multiple of 512";
      if (b->next != nullptr && b->next->prev != b) return block + "broken back link";
      std::string state = check_block_state(*b, tally);
      if (!state.empty()) return block + state;
      if (b->is_free() && b->next != nullptr && b->next->is_free()) {
        return block + "free neighbours not coalesced";
      }
      end += b->size;
    }
    if (last != seg.last) return where + ": last block pointer is stale";
    if (end != seg.size) {
      return where + ": blocks cover " + std::to_string(end) + " of " + std::to_string(seg.size) + " bytes";
    }
    tally.reserved += seg.size;
    return "";
  }

  // A block is exactly one of: allocated (in `live`), waiting on events, or free (in its pool).
  std::string check_block_state(const Block& b, Tally& tally) const {
    const BlockPool& pool = b.segment->small ? small_pool : large_pool;
    auto pooled = pool.find(const_cast<Block*>(&b));
    bool in_pool = pooled != pool.end() && *pooled == &b;
    auto found = live.find(b.address);
    bool in_live = found != live.end() && found->second == &b;
    if (b.allocated) {
      if (!in_live || in_pool || b.pending_events != 0) return "allocated but not exactly in the live map";
      ++tally.allocated_blocks;
      tally.allocated += b.size;
      tally.active += b.size;
      tally.requested += b.requested;
      tally.tag_allocated[static_cast<int>(b.tag)] += b.size;
    } else if (b.pending_events > 0) {
      if (in_live || in_pool) return "waiting on events but reachable";
      tally.active += b.size;
      tally.pending_events += static_cast<std::size_t>(b.pending_events);
    } else {
      if (in_live || !in_pool) return "free but not exactly in its pool";
      ++tally.free_blocks;
    }
    return "";
  }

  std::string check_totals(const Tally& tally) const {
    auto differs = [](std::int64_t counter, std::size_t walked) {
      return counter < 0 || static_cast<std::size_t>(counter) != walked;
    };
    if (tally.free_blocks != small_pool.size() + large_pool.size()) {
      return "a pool holds blocks no segment has";
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
    if (config.budget != AllocatorConfig::kUnlimited &&
        !fits_under(tally.reserved, config.simulated_external, config.budget)) {
      return "reserved + simulated external exceeds the budget";
    }
    for (const auto& [key, seg] : expandable) {
      auto it = segments.find(seg->id);
      if (it == segments.end() || it->second != seg) return "an expandable range is not a segment";
    }
    return "";
  }

  // ---- the OOM ----
  [[noreturn]] void throw_oom(std::size_t size, Tag tag, StreamHandle stream) {
    OomInfo info;
    info.requested = size;
    info.budget = config.budget;
    std::size_t capacity = source_refused ? source.capacity_bytes() : 0;
    if (capacity > 0) info.budget = std::min(info.budget, capacity);
    info.allocated = static_cast<std::size_t>(stats.allocated.current);
    info.reserved = static_cast<std::size_t>(stats.reserved.current);
    info.largest_free_block = largest_free_block();
    // Device memory outside the allocator matters only when the device itself refused.
    info.external = config.simulated_external + (source_refused ? source.external_bytes() : 0);
    info.tag = tag;
    info.site = current_site();
    info.max_split_size_set = config.max_split_size != AllocatorConfig::kUnlimited;
    info.expandable_segments = config.expandable_segments && source.supports_expandable();
    for (Tag t : all_tags()) {
      info.tag_allocated[static_cast<int>(t)] = static_cast<std::size_t>(stats.tag(t).current);
    }
    info.largest_tag = stats.largest_tag_current();
    diagnose(info);
    if (size > kMaxRequest) {
      // Refused before the budget is consulted: "fits under an unlimited budget" must not turn
      // into an external or fragmentation diagnosis.
      info.diagnosis = Diagnosis::capacity;
      info.remedy = "no device holds " + format_size(size) + " (at most " + format_size(kMaxRequest) +
                    " is ever tried): look for an overflow or a negative size cast to unsigned";
    }
    ++stats.num_ooms;
    record(EventKind::oom, size, 0, 0, tag, stream);
    throw OomError(std::move(info));
  }

  // ---- the public operations (under the allocator's mutex) ----
  void* allocate(std::size_t bytes, Tag tag, StreamHandle stream) {
    if (bytes == 0) return nullptr;
    process_events();
    source_refused = false;
    if (bytes > kMaxRequest) throw_oom(bytes, tag, stream);
    std::size_t size = round_size(bytes);
    bool small = size <= kSmallSize;
    Block* block = find_free_block(small, stream, size);
    if (block == nullptr) block = grow(small, stream, size, tag);
    if (block == nullptr) {
      // PyTorch's retry: give every cached segment back and try once more.
      release_cached();
      ++stats.num_alloc_retries;
      source_refused = false;
      block = find_free_block(small, stream, size);
      if (block == nullptr) block = grow(small, stream, size, tag);
      if (block == nullptr) throw_oom(size, tag, stream);
    }
    if (should_split(block, size)) split(block, size);
    block->allocated = true;
    block->requested = bytes;
    block->tag = tag;
    live.emplace(block->address, block);

    auto amount = static_cast<std::int64_t>(block->size);
    stats.allocated.increase(amount);
    stats.active.increase(amount);
    stats.requested.increase(static_cast<std::int64_t>(bytes));
    stats.allocations.increase(1);
    stats.tag_allocated[static_cast<int>(tag)].increase(amount);
    update_scopes(tag);
    record(EventKind::alloc, block->size, block->segment_id, block->offset, tag, stream);
    return reinterpret_cast<void*>(block->address);
  }

  Block* live_block(const void* ptr) const {
    auto it = live.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == live.end()) {
      throw std::invalid_argument("CachingAllocator: pointer was not allocated here or was already freed");
    }
    return it->second;
  }

  void deallocate(void* ptr) {
    if (ptr == nullptr) return;
    Block* block = live_block(ptr);
    live.erase(block->address);
    auto amount = static_cast<std::int64_t>(block->size);
    stats.allocated.decrease(amount);
    stats.requested.decrease(static_cast<std::int64_t>(block->requested));
    stats.allocations.decrease(1);
    stats.tag_allocated[static_cast<int>(block->tag)].decrease(amount);
    record(EventKind::free, block->size, block->segment_id, block->offset, block->tag, block->stream);
    block->allocated = false;
    block->requested = 0;
    if (block->stream_uses.empty()) {
      free_block(block);
      return;
    }
    for (StreamHandle use : block->stream_uses) {
      pending.emplace_back(source.record_event(use), block);
      ++block->pending_events;
    }
    block->stream_uses.clear();
  }

  void record_stream(void* ptr, StreamHandle stream) {
    Block* block = live_block(ptr);
    if (stream == block->stream) return;
    auto& uses = block->stream_uses;
    if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
  }

  void empty_cache() {
    release_cached();
    ++stats.num_empty_cache;
    record(EventKind::empty_cache, 0, 0, 0, Tag::other, 0);
  }

  // Destructor work: everything back to the source, whatever state it is in.
  void release_everything() {
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
        if (seg->size > 0) source.unmap(reinterpret_cast<void*>(seg->base), seg->size);
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
};

CachingAllocator::CachingAllocator(MemorySource& source, AllocatorConfig config)
    : source_(source),
      config_(config),
      trace_(config.trace_capacity),
      impl_(std::make_unique<Impl>(source_, config_, trace_)) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    impl_->release_everything();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oomlab: error while releasing allocator memory: %s\n", e.what());
  }
}

void* CachingAllocator::allocate(std::size_t bytes, StreamHandle stream) {
  return allocate(bytes, current_tag(), stream);
}

void* CachingAllocator::allocate(std::size_t bytes, Tag tag, StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  return impl_->allocate(bytes, tag, stream);
}

void CachingAllocator::deallocate(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  impl_->deallocate(ptr);
}

void CachingAllocator::record_stream(void* ptr, StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  impl_->record_stream(ptr, stream);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  impl_->empty_cache();
}

void CachingAllocator::mark_step(std::int64_t step) {
  std::lock_guard<std::mutex> lock(mutex_);
  impl_->record(EventKind::step, 0, 0, 0, Tag::other, 0, step);
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats out = impl_->stats;
  out.largest_free_block = impl_->largest_free_block();
  std::int64_t unallocated = out.reserved.current - out.allocated.current;
  out.fragmentation =
      unallocated > 0 ? 1.0 - static_cast<double>(out.largest_free_block) / static_cast<double>(unallocated) : 0.0;
  if (out.fragmentation < 0) out.fragmentation = 0;
  return out;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats& s = impl_->stats;
  for (Counter* c : {&s.allocated, &s.reserved, &s.active, &s.requested, &s.segments, &s.allocations}) {
    c->reset_peak();
  }
  for (Counter& c : s.tag_allocated) c.reset_peak();
}

void CachingAllocator::push_scope() {
  std::lock_guard<std::mutex> lock(mutex_);
  ScopeStats scope;
  scope.peak_allocated = impl_->stats.allocated.current;
  scope.peak_reserved = impl_->stats.reserved.current;
  for (Tag t : all_tags()) scope.peak_tag_allocated[static_cast<int>(t)] = impl_->stats.tag(t).current;
  impl_->scopes.push_back(scope);
}

ScopeStats CachingAllocator::pop_scope() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (impl_->scopes.empty()) throw std::logic_error("CachingAllocator::pop_scope without push_scope");
  ScopeStats scope = impl_->scopes.back();
  impl_->scopes.pop_back();
  return scope;
}

std::string CachingAllocator::check_consistency() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return impl_->first_inconsistency();
}

std::size_t CachingAllocator::block_size(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return impl_->live_block(ptr)->size;
}

namespace {

std::string summary_row(const char* name, const Counter& c, bool bytes) {
  auto cell = [&](std::int64_t v) {
    return bytes ? format_size(static_cast<std::size_t>(std::max<std::int64_t>(v, 0))) : std::to_string(v);
  };
  char line[160];
  std::snprintf(line, sizeof line, "| %-25s | %12s | %12s | %12s | %12s |\n", name, cell(c.current).c_str(),
                cell(c.peak).c_str(), cell(c.total).c_str(), cell(c.total - c.current).c_str());
  return line;
}

}  // namespace

std::string CachingAllocator::memory_summary() const {
  MemoryStats s = stats();
  const std::string rule = "|" + std::string(87, '-') + "|\n";
  const std::string heavy = "|" + std::string(87, '=') + "|\n";
  char line[160];
  std::string out = heavy;
  std::snprintf(line, sizeof line, "| %-85s |\n",
                ("oomlab memory summary (source " + source_.name() + ", " + config_.to_string() + ")").c_str());
  out += line;
  out += rule;
  std::snprintf(line, sizeof line, "| %-25s | %12s | %12s | %12s | %12s |\n", "Metric", "Cur Usage",
                "Peak Usage", "Tot Alloc", "Tot Freed");
  out += line;
  out += rule;
  out += summary_row("Allocated memory", s.allocated, true);
  out += summary_row("Active memory", s.active, true);
  out += summary_row("Requested memory", s.requested, true);
  out += summary_row("Reserved memory", s.reserved, true);
  out += rule;
  for (Tag t : all_tags()) {
    out += summary_row((std::string("  tag ") + tag_name(t)).c_str(), s.tag(t), true);
  }
  out += rule;
  out += summary_row("Allocations", s.allocations, false);
  out += summary_row("Reserved segments", s.segments, false);
  out += rule;
  std::snprintf(line, sizeof line, "| %-25s | %-57s |\n", "Budget",
                format_budget(config_.budget).c_str());
  out += line;
  std::snprintf(line, sizeof line, "| %-25s | %-57s |\n", "Non-releasable memory",
                format_size(static_cast<std::size_t>(std::max<std::int64_t>(s.reserved.current - s.allocated.current, 0))).c_str());
  out += line;
  std::snprintf(line, sizeof line, "| %-25s | %-57s |\n", "Largest free block", format_size(s.largest_free_block).c_str());
  out += line;
  std::snprintf(line, sizeof line, "| %-25s | %-57.3f |\n", "Fragmentation", s.fragmentation);
  out += line;
  std::snprintf(line, sizeof line, "| %-25s | %-57s |\n", "OOMs / retries / empty_cache",
                (std::to_string(s.num_ooms) + " / " + std::to_string(s.num_alloc_retries) + " / " +
                 std::to_string(s.num_empty_cache)).c_str());
  out += line;
  out += heavy;
  return out;
}

}  // namespace oomlab::memory
