// The caching allocator's insides, shared by its source files (one job each):
//   caching_allocator.cpp     the public calls, the request flow (malloc's order of attempts), the
//                             OOM, memory_summary()
//   allocator_blocks.cpp      pools, best fit, split, merge, free, new segments, the uncached mode
//   allocator_expandable.cpp  expandable segments (mapped and unmapped blocks of one address range)
//   allocator_release.cpp     giving memory back: release_cached, oversize release, garbage collection
//   allocator_check.cpp       the structural self-check
// Names follow c10/cuda/CUDACachingAllocator.cpp where the rule is PyTorch's.
#pragma once
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/memory/alloc_rounding.hpp"
#include "harness/memory/caching_allocator.hpp"

namespace oomlab::memory {
namespace detail {

constexpr std::size_t kMaxRequest = std::size_t{1} << 62;  // beyond this no budget can hold it
constexpr std::size_t kExpandableReservation = std::size_t{1} << 40;  // 1 TiB of address space

inline std::size_t round_up(std::size_t bytes, std::size_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
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
  bool mapped = true;            // false: expandable address space with no pages behind it
  Tag tag = Tag::other;
  int pending_events = 0;        // events that must complete before the block is free
  std::int64_t gc_count_base = 0;  // the pool's free-block searches when it entered the pool
  std::vector<StreamHandle> stream_uses;  // other streams it was used on (record_stream)

  bool is_free() const { return !allocated && pending_events == 0; }
  bool is_split() const { return prev != nullptr || next != nullptr; }
};

struct Segment {
  std::uint32_t id = 0;
  std::uintptr_t base = 0;
  std::size_t size = 0;          // bytes reserved from the source (mapped bytes if expandable)
  std::size_t reservation = 0;   // address range reserved (expandable only)
  std::size_t granule = 0;       // expandable: pages are mapped and unmapped in these units
  bool expandable = false;
  bool small = false;
  bool uncached = false;         // caching:false: one block, returned to the source when freed
  PoolHandle pool = kDefaultPool;
  StreamHandle stream = 0;
  Block* first = nullptr;
  Block* last = nullptr;
};

// Best fit: (stream, size), ties by address (a replay, as PyTorch) or by (segment id, offset)
// (every other run: the same choice on every source, whatever addresses it hands out).
struct BlockLess {
  bool by_address = false;
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    if (by_address) return a->address < b->address;
    if (a->segment_id != b->segment_id) return a->segment_id < b->segment_id;
    return a->offset < b->offset;
  }
};

// Unmapped expandable blocks, lowest address first per stream (PyTorch's BlockComparatorAddress).
struct AddressLess {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    return a->address < b->address;
  }
};

// A pool's free, mapped blocks in best-fit order, plus what statistics and releases would
// otherwise walk every free block for (a replay can hold 100k of them, and asks after every new
// segment): their sizes, for the largest free block, and the blocks a release can return
// (whole ordinary segments, expandable blocks), in the same order. Kept as blocks come and go.
// A pooled block's key, split state and segment never change (they change out of the pool).
class FreeBlocks {
 public:
  using Set = std::set<Block*, BlockLess>;
  using iterator = Set::iterator;
  using const_iterator = Set::const_iterator;

  explicit FreeBlocks(bool ties_by_address)
      : blocks_(BlockLess{ties_by_address}), releasable_(BlockLess{ties_by_address}) {}

  void insert(Block* b) {
    if (!blocks_.insert(b).second) return;
    sizes_.insert(b->size);
    if (b->segment->expandable || !b->is_split()) releasable_.insert(b);
  }
  iterator erase(iterator it) {
    forget(*it);
    return blocks_.erase(it);
  }
  std::size_t erase(Block* b) {
    const auto it = blocks_.find(b);
    if (it == blocks_.end()) return 0;
    erase(it);
    return 1;
  }
  iterator find(Block* b) const { return blocks_.find(b); }
  iterator lower_bound(Block* key) const { return blocks_.lower_bound(key); }
  iterator begin() const { return blocks_.begin(); }
  iterator end() const { return blocks_.end(); }
  std::size_t size() const { return blocks_.size(); }
  bool empty() const { return blocks_.empty(); }

  std::size_t largest() const { return sizes_.empty() ? 0 : *sizes_.rbegin(); }
  const Set& releasable() const { return releasable_; }
  // "" when the sizes and the releasable set agree with the blocks (O(blocks): the self-check).
  std::string first_disagreement() const;

 private:
  void forget(Block* b) {
    sizes_.erase(sizes_.find(b->size));
    releasable_.erase(b);
  }
  Set blocks_;
  std::multiset<std::size_t> sizes_;
  Set releasable_;
};

struct BlockPool {
  explicit BlockPool(bool small, bool ties_by_address) : blocks(ties_by_address), small(small) {}
  FreeBlocks blocks;                      // free, mapped blocks
  std::set<Block*, AddressLess> unmapped; // expandable address space without pages
  bool small;
  std::int64_t free_block_searches = 0;   // get_free_blocks_call_count: the garbage collector's clock
};

// A private pool's blocks (PyTorch's PrivatePool): never shared with the default pools.
struct PrivatePool {
  explicit PrivatePool(bool ties_by_address) : small(true, ties_by_address), large(false, ties_by_address) {}
  BlockPool small, large;
  bool freeable = false;  // its owner let go: release_cached may return its cached segments
};

bool fits_under(std::size_t used, std::size_t extra, std::size_t limit);

}  // namespace detail

struct CachingAllocator::Impl {
  using Block = detail::Block;
  using Segment = detail::Segment;
  using BlockPool = detail::BlockPool;

  Impl(MemorySource& source, const AllocatorConfig& config, Trace& trace);

  MemorySource& source;
  const AllocatorConfig& config;
  Trace& trace;
  std::chrono::steady_clock::time_point start;

  BlockPool small_pool, large_pool;
  std::map<PoolHandle, detail::PrivatePool> private_pools;  // by handle: a deterministic release order
  std::map<PoolHandle, PoolBytes> pool_bytes;               // every pool that ever held memory
  PoolHandle request_pool = kDefaultPool;                   // the pool the request under way uses
  std::unordered_map<std::uintptr_t, Block*> live;
  std::map<std::uint32_t, Segment*> segments;  // by id: deterministic release order
  std::vector<std::pair<EventHandle, Block*>> pending;  // record_stream events
  std::vector<Block*> spare_blocks;  // recycled Block objects: no heap traffic on the hot path
  std::uint32_t next_segment_id = 0;
  MemoryStats stats;
  std::vector<ScopeStats> scopes;
  bool source_refused = false;  // the last growth failed in the source, not at the budget

  // ---- caching_allocator.cpp: trace, statistics, the request flow ----
  void record(EventKind kind, std::size_t bytes, std::uint32_t segment, std::size_t offset, Tag tag,
              StreamHandle stream, std::int64_t step = -1);
  void update_scopes(Tag tag);
  void add_reserved(std::size_t bytes, Tag tag, PoolHandle pool);
  void remove_reserved(std::size_t bytes, PoolHandle pool);
  std::size_t largest_free_block() const;
  bool within_budget(std::size_t extra) const;
  bool expandable_on() const;
  bool gc_on() const;
  void* allocate(std::size_t bytes, Tag tag, StreamHandle stream, PoolHandle pool);
  bool cached_block_fits(std::size_t bytes, StreamHandle stream, PoolHandle pool);
  void release_pool(PoolHandle pool);
  Block* allocate_block(bool small, StreamHandle stream, std::size_t size, Tag tag);
  void hand_out(Block* block, std::size_t bytes, Tag tag, StreamHandle stream);
  Block* live_block(const void* ptr) const;
  void deallocate(void* ptr);
  void record_stream(void* ptr, StreamHandle stream);
  void empty_cache();
  [[noreturn]] void throw_oom(std::size_t size, Tag tag, StreamHandle stream);

  // ---- allocator_blocks.cpp ----
  Block* new_block();
  void recycle(Block* b) { spare_blocks.push_back(b); }
  BlockPool& pool_of(const Block* b) { return pool_in(b->segment->pool, b->segment->small); }
  BlockPool& pool_in(PoolHandle pool, bool small);  // the default pools, or a private pool's
  BlockPool& pool_for(bool small) { return pool_in(request_pool, small); }
  void insert_free(Block* b);  // into its pool, stamping the garbage collector's clock
  Block* get_free_block(bool small, StreamHandle stream, std::size_t size);
  bool should_split(const Block* block, std::size_t size) const;
  void split(Block* block, std::size_t size);
  std::size_t try_merge(Block* into, Block* from);
  void free_block(Block* block);
  Segment* new_segment(bool small, StreamHandle stream, std::uintptr_t base, std::size_t size);
  Block* whole_block(Segment* seg, std::size_t offset, std::size_t size);
  Block* alloc_block(bool small, StreamHandle stream, std::size_t size, Tag tag);
  Block* grow_segment(bool small, StreamHandle stream, std::size_t size, Tag tag);
  Block* allocate_uncached(std::size_t size, StreamHandle stream, Tag tag);
  void forget_segment(Segment* seg);

  // ---- allocator_expandable.cpp ----
  std::size_t expandable_reservation(std::size_t granule) const;
  Block* find_expandable_block(bool small, StreamHandle stream, std::size_t size);
  bool map_block(Block* to_map, std::size_t size, Tag tag);
  Block* try_allocate_expandable(bool small, StreamHandle stream, std::size_t size, Tag tag);
  void unmap_block(Block* block);
  void release_expandable_segment(Block* block);

  // ---- allocator_release.cpp ----
  void process_events();
  void wait_for_events();
  void release_block(Block* block);
  void release_blocks(BlockPool& pool);
  void release_cached();
  bool release_available_cached_blocks(bool small, StreamHandle stream, std::size_t size);
  void garbage_collect();
  void release_uncached(Block* block);
  void release_everything();

  // ---- allocator_check.cpp ----
  struct Tally {
    std::size_t reserved = 0, allocated = 0, active = 0, requested = 0;
    std::size_t free_blocks = 0, unmapped_blocks = 0, allocated_blocks = 0, pending_events = 0;
    std::array<std::size_t, kTagCount> tag_allocated{};
  };
  std::string first_inconsistency() const;
  std::string check_segment(std::uint32_t id, const Segment& seg, Tally& tally) const;
  std::string check_block_state(const Block& b, Tally& tally) const;
  std::string check_totals(const Tally& tally) const;
};

}  // namespace oomlab::memory
