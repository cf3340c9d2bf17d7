// The caching allocator: PyTorch's CUDACachingAllocator semantics over any MemorySource.
//
// Rules (each has its own test):
//  - request sizes round up to 512 bytes, or with roundup_power2_divisions to the next division
//    of their power of two (alloc_rounding.hpp);
//  - small pool: requests <= 1 MiB, carved from 2 MiB segments; large pool: requests < 10 MiB
//    come from 20 MiB segments, larger ones from segments rounded up to 2 MiB;
//  - pools are per stream: best fit by (stream, size, position); a block is split when the
//    remainder is worth keeping (small pool or expandable segments: >= 512 B, large pool:
//    > 1 MiB); blocks larger than max_split_size are never split, a request under
//    max_split_size never takes one of them, and a larger request takes one only when it wastes
//    less than max_non_split_rounding (20 MiB);
//  - freeing coalesces with free neighbours in the same segment;
//  - when no cached block fits: garbage collection of the oldest whole cached segments (with a
//    budget and garbage_collection_threshold), a new segment, else the cached oversize blocks
//    released (max_split_size set) and a retry, else every cached segment released and one last
//    try, then OomError; the allocator stays usable;
//  - empty_cache() returns every fully free segment to the source, large pool first;
//  - expandable_segments: one address range per (stream, pool), mapped and unmapped in 2 MiB
//    (small) or 20 MiB (large) granules at the lowest address with room; releasing the cache
//    unmaps every whole free granule (allocator_expandable.cpp);
//  - caching:false: every request is its own source allocation, returned when freed;
//  - private pools (a CUDA graph's capture, a torch.cuda.MemPool): a request names its pool; a
//    pool's blocks and segments serve only its own requests, and its cached segments are released
//    only once the pool is (release_pool, or empty_cache/the OOM path after mark_pool_freeable),
//    as PyTorch's graph_pools_freeable. Garbage collection walks the default large pool only.
//
// Budget: the cap is on reserved + simulated_external. Memory used outside the allocator on a
// real GPU (this process's context, other processes) is NOT charged against it, because a GPU
// profile's budget already subtracts one context; it shows up as `external` in the diagnosis
// when the device itself refuses. Best-fit ties break on (segment id, offset), not addresses,
// so every source makes the same choices and host/dry/cuda traces are identical.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/oom_error.hpp"
#include "harness/memory/source.hpp"
#include "harness/memory/stats.hpp"
#include "harness/memory/tags.hpp"
#include "harness/memory/trace.hpp"

namespace oomlab::memory {

// Which pool a request is served from: 0 is the default pool, any other value a private one.
using PoolHandle = std::uint64_t;
constexpr PoolHandle kDefaultPool = 0;

// One pool's bytes now: its segments (mapped pages) and its allocated blocks.
struct PoolBytes {
  std::size_t reserved = 0;
  std::size_t allocated = 0;
};

// Peaks seen between push_scope() and the matching pop_scope().
struct ScopeStats {
  std::int64_t peak_allocated = 0;
  std::int64_t peak_reserved = 0;
  std::array<std::int64_t, kTagCount> peak_tag_allocated{};
};

class CachingAllocator {
 public:
  CachingAllocator(MemorySource& source, AllocatorConfig config);
  ~CachingAllocator();  // returns every segment; live blocks at this point are reported on stderr
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Throws OomError. A 0-byte request returns nullptr. The tag defaults to current_tag().
  void* allocate(std::size_t bytes, StreamHandle stream = 0);
  void* allocate(std::size_t bytes, Tag tag, StreamHandle stream);
  void* allocate(std::size_t bytes, Tag tag, StreamHandle stream, PoolHandle pool);
  // Whether `pool`'s cache holds a block for this request (best fit and the max_split_size
  // rules), without taking it: which pool a replayed request came from is inferred from it.
  bool cached_block_fits(std::size_t bytes, StreamHandle stream, PoolHandle pool) const;
  // A private pool's owner let go of it (graph destroyed, MemPool deleted): its cached segments
  // may now be released. release_pool also releases them now (the MemPool destructor's
  // emptyCache(pool)). No-op for the default pool or one never used.
  void mark_pool_freeable(PoolHandle pool);
  void release_pool(PoolHandle pool);
  PoolBytes pool_bytes(PoolHandle pool) const;
  // Null is a no-op; an unknown pointer throws std::invalid_argument.
  void deallocate(void* ptr);
  // The block was also used on `stream`: do not reuse it before that stream's work is done.
  void record_stream(void* ptr, StreamHandle stream);

  void empty_cache();
  void mark_step(std::int64_t step);  // a step boundary in the trace

  MemoryStats stats() const;
  void reset_peak_stats();
  void push_scope();
  ScopeStats pop_scope();  // throws std::logic_error without a matching push

  std::size_t block_size(const void* ptr) const;  // rounded size of a live block
  // "" when the internal invariants hold (segments tiled by blocks, free neighbours coalesced,
  // pools, live map and statistics agreeing with the blocks, the budget kept), else the first
  // one broken. O(blocks): for tests and the fuzzer, not the hot path.
  std::string check_consistency() const;
  std::string memory_summary() const;             // a table like torch.cuda.memory_summary()
  const Trace& trace() const { return trace_; }
  const AllocatorConfig& config() const { return config_; }
  MemorySource& source() { return source_; }

 private:
  struct Impl;
  MemorySource& source_;
  AllocatorConfig config_;
  Trace trace_;
  mutable std::mutex mutex_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oomlab::memory
