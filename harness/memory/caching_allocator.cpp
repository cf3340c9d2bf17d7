// The caching allocator: the public calls and the request flow. Follows PyTorch's
// CUDACachingAllocator (c10/cuda/CUDACachingAllocator.cpp) rule for rule; the header lists the
// rules and detail/allocator_impl.hpp which file holds which. Two deliberate differences, both
// for determinism:
//  - best fit breaks ties by (segment id, offset) instead of the raw address, so host, dry and
//    cuda make the same choices and their traces are identical (a replay, which hands out
//    PyTorch's own addresses, breaks them by address: ties_by_address);
//  - the budget caps reserved + simulated_external only. Device memory used outside the
//    allocator on cuda (this process's context, other processes) is not charged against it,
//    because a GPU profile's budget already subtracts one context: an H200 capped at a 12 GiB
//    profile then fails exactly where the 12 GiB card fails. Real external use still shows up
//    when the device itself refuses, and the OOM diagnosis reports it.
#include "harness/memory/caching_allocator.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "harness/memory/budget.hpp"
#include "harness/memory/detail/allocator_impl.hpp"
#include "harness/memory/site.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory {

bool detail::fits_under(std::size_t used, std::size_t extra, std::size_t limit) {
  return used <= limit && extra <= limit - used;
}

CachingAllocator::Impl::Impl(MemorySource& source, const AllocatorConfig& config, Trace& trace)
    : source(source),
      config(config),
      trace(trace),
      start(std::chrono::steady_clock::now()),
      small_pool(true, config.ties_by_address),
      large_pool(false, config.ties_by_address) {
  live.reserve(1024);
}

// ---- trace and statistics ----

void CachingAllocator::Impl::record(EventKind kind, std::size_t bytes, std::uint32_t segment, std::size_t offset,
                                    Tag tag, StreamHandle stream, std::int64_t step) {
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

void CachingAllocator::Impl::update_scopes(Tag tag) {
  for (ScopeStats& scope : scopes) {
    scope.peak_allocated = std::max(scope.peak_allocated, stats.allocated.current);
    scope.peak_reserved = std::max(scope.peak_reserved, stats.reserved.current);
    auto& tag_peak = scope.peak_tag_allocated[static_cast<int>(tag)];
    tag_peak = std::max(tag_peak, stats.tag(tag).current);
  }
}

void CachingAllocator::Impl::add_reserved(std::size_t bytes, Tag tag, PoolHandle pool) {
  stats.reserved.increase(static_cast<std::int64_t>(bytes));
  pool_bytes[pool].reserved += bytes;
  update_scopes(tag);
}

void CachingAllocator::Impl::remove_reserved(std::size_t bytes, PoolHandle pool) {
  stats.reserved.decrease(static_cast<std::int64_t>(bytes));
  pool_bytes[pool].reserved -= bytes;
}

// Kept by the pools as blocks come and go: stats() after every new segment stays O(1).
std::size_t CachingAllocator::Impl::largest_free_block() const {
  std::size_t largest = std::max(small_pool.blocks.largest(), large_pool.blocks.largest());
  for (const auto& [handle, pool] : private_pools) {
    largest = std::max({largest, pool.small.blocks.largest(), pool.large.blocks.largest()});
  }
  return largest;
}

bool CachingAllocator::Impl::within_budget(std::size_t extra) const {
  if (config.budget == AllocatorConfig::kUnlimited) return true;
  std::size_t used = static_cast<std::size_t>(stats.reserved.current);
  return detail::fits_under(used, config.simulated_external, config.budget) &&
         detail::fits_under(used + config.simulated_external, extra, config.budget);
}

bool CachingAllocator::Impl::expandable_on() const {
  return config.expandable_segments && source.supports_expandable();
}

// PyTorch collects only under set_per_process_memory_fraction; a budget is oomlab's fraction.
bool CachingAllocator::Impl::gc_on() const {
  return config.garbage_collection_threshold > 0 && config.budget != AllocatorConfig::kUnlimited;
}

// ---- the request flow ----

void* CachingAllocator::Impl::allocate(std::size_t bytes, Tag tag, StreamHandle stream, PoolHandle pool) {
  if (bytes == 0) return nullptr;
  request_pool = pool;
  process_events();
  source_refused = false;
  if (bytes > detail::kMaxRequest) throw_oom(bytes, tag, stream);
  const std::size_t size = round_request(bytes, config.roundup_power2_divisions);
  Block* block = config.caching ? allocate_block(size <= kSmallSize, stream, size, tag)
                                : allocate_uncached(size, stream, tag);
  if (block == nullptr) throw_oom(size, tag, stream);
  if (config.caching && should_split(block, size)) split(block, size);
  hand_out(block, bytes, tag, stream);
  return reinterpret_cast<void*>(block->address);
}

// get_free_block's answer without its effects: the block stays cached, the GC clock stands still.
bool CachingAllocator::Impl::cached_block_fits(std::size_t bytes, StreamHandle stream, PoolHandle pool) {
  if (bytes == 0 || bytes > detail::kMaxRequest || !config.caching) return false;
  const std::size_t size = round_request(bytes, config.roundup_power2_divisions);
  request_pool = pool;
  BlockPool& blocks = pool_for(size <= kSmallSize);
  const std::int64_t searches = blocks.free_block_searches;
  Block* found = get_free_block(size <= kSmallSize, stream, size);
  blocks.free_block_searches = searches;
  if (found == nullptr) return false;
  blocks.blocks.insert(found);
  return true;
}

// DeviceCachingAllocator::malloc's order: a cached block; else (after garbage collection, when
// on) a new segment; else release the cached oversize blocks (max_split_size set) and try again;
// else release every cached segment and try a last time.
CachingAllocator::Impl::Block* CachingAllocator::Impl::allocate_block(bool small, StreamHandle stream,
                                                                      std::size_t size, Tag tag) {
  if (Block* cached = get_free_block(small, stream, size)) return cached;
  if (gc_on()) garbage_collect();
  Block* block = alloc_block(small, stream, size, tag);
  if (block == nullptr && release_available_cached_blocks(small, stream, size)) {
    block = alloc_block(small, stream, size, tag);
  }
  if (block == nullptr) {
    release_cached();
    ++stats.num_alloc_retries;
    source_refused = false;
    block = alloc_block(small, stream, size, tag);
  }
  return block;
}

void CachingAllocator::Impl::hand_out(Block* block, std::size_t bytes, Tag tag, StreamHandle stream) {
  block->allocated = true;
  block->requested = bytes;
  block->tag = tag;
  live.emplace(block->address, block);
  const auto amount = static_cast<std::int64_t>(block->size);
  stats.allocated.increase(amount);
  pool_bytes[block->segment->pool].allocated += block->size;
  stats.active.increase(amount);
  stats.requested.increase(static_cast<std::int64_t>(bytes));
  stats.allocations.increase(1);
  stats.tag_allocated[static_cast<int>(tag)].increase(amount);
  update_scopes(tag);
  record(EventKind::alloc, block->size, block->segment_id, block->offset, tag, stream);
}

CachingAllocator::Impl::Block* CachingAllocator::Impl::live_block(const void* ptr) const {
  auto it = live.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == live.end()) {
    throw std::invalid_argument("CachingAllocator: pointer was not allocated here or was already freed");
  }
  return it->second;
}

void CachingAllocator::Impl::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  Block* block = live_block(ptr);
  live.erase(block->address);
  const auto amount = static_cast<std::int64_t>(block->size);
  stats.allocated.decrease(amount);
  pool_bytes[block->segment->pool].allocated -= block->size;
  stats.requested.decrease(static_cast<std::int64_t>(block->requested));
  stats.allocations.decrease(1);
  stats.tag_allocated[static_cast<int>(block->tag)].decrease(amount);
  record(EventKind::free, block->size, block->segment_id, block->offset, block->tag, block->stream);
  block->allocated = false;
  block->requested = 0;
  if (block->segment->uncached) {
    release_uncached(block);  // PyTorch's uncached_delete: cudaFree at once, whatever the streams
    return;
  }
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

void CachingAllocator::Impl::record_stream(void* ptr, StreamHandle stream) {
  Block* block = live_block(ptr);
  if (stream == block->stream) return;
  auto& uses = block->stream_uses;
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
}

void CachingAllocator::Impl::empty_cache() {
  release_cached();
  ++stats.num_empty_cache;
  record(EventKind::empty_cache, 0, 0, 0, Tag::other, 0);
}

// ---- the OOM ----
void CachingAllocator::Impl::throw_oom(std::size_t size, Tag tag, StreamHandle stream) {
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
  if (size > detail::kMaxRequest) {
    // Refused before the budget is consulted: "fits under an unlimited budget" must not turn
    // into an external or fragmentation diagnosis.
    info.diagnosis = Diagnosis::capacity;
    info.remedy = "no device holds " + format_size(size) + " (at most " + format_size(detail::kMaxRequest) +
                  " is ever tried): look for an overflow or a negative size cast to unsigned";
  }
  ++stats.num_ooms;
  record(EventKind::oom, size, 0, 0, tag, stream);
  throw OomError(std::move(info));
}

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
  return impl_->allocate(bytes, tag, stream, kDefaultPool);
}

void* CachingAllocator::allocate(std::size_t bytes, Tag tag, StreamHandle stream, PoolHandle pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  return impl_->allocate(bytes, tag, stream, pool);
}

bool CachingAllocator::cached_block_fits(std::size_t bytes, StreamHandle stream, PoolHandle pool) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return impl_->cached_block_fits(bytes, stream, pool);
}

void CachingAllocator::mark_pool_freeable(PoolHandle pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = impl_->private_pools.find(pool);
  if (it != impl_->private_pools.end()) it->second.freeable = true;
}

void CachingAllocator::release_pool(PoolHandle pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  impl_->release_pool(pool);
}

PoolBytes CachingAllocator::pool_bytes(PoolHandle pool) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = impl_->pool_bytes.find(pool);
  return it == impl_->pool_bytes.end() ? PoolBytes{} : it->second;
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
  std::snprintf(
      line, sizeof line, "| %-25s | %-57s |\n", "Non-releasable memory",
      format_size(static_cast<std::size_t>(std::max<std::int64_t>(s.reserved.current - s.allocated.current, 0)))
          .c_str());
  out += line;
  std::snprintf(line, sizeof line, "| %-25s | %-57s |\n", "Largest free block",
                format_size(s.largest_free_block).c_str());
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
