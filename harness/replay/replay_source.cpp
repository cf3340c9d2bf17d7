#include "harness/replay/replay_source.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace oomlab::replay {

void ReplaySource::begin_step(const SegmentDecision* first, std::size_t count) {
  expected_ = first;
  expected_count_ = count;
  calls_.clear();
}

StepComparison ReplaySource::end_step() const {
  StepComparison out;
  const std::size_t positions = std::max(expected_count_, calls_.size());
  for (std::size_t i = 0; i < positions; ++i) {
    const bool same = i < expected_count_ && i < calls_.size() && expected_[i].kind == calls_[i].kind &&
                      expected_[i].size == calls_[i].size;
    if (same) continue;
    if (out.mismatches++ > 0) continue;
    out.first = i;
    out.pytorch = i < expected_count_ ? &expected_[i] : nullptr;
    out.oomlab_made_a_call = i < calls_.size();
    if (out.oomlab_made_a_call) out.oomlab = calls_[i];
  }
  return out;
}

void ReplaySource::called(ReplayEventKind kind, std::uint64_t size) { calls_.push_back({kind, size}); }

bool ReplaySource::overlaps(std::uintptr_t base, std::size_t bytes) const {
  auto next = held_.lower_bound(base);
  if (next != held_.end() && next->first < base + bytes) return true;
  if (next == held_.begin()) return false;
  const auto prev = std::prev(next);
  return prev->first + prev->second > base;
}

std::uintptr_t ReplaySource::fresh_range(std::size_t bytes) {
  const std::uintptr_t base = next_fresh_;
  next_fresh_ += (bytes + kGranularity - 1) / kGranularity * kGranularity + kGranularity;
  return base;
}

void* ReplaySource::do_allocate(std::size_t bytes) {
  const std::size_t position = calls_.size();
  called(ReplayEventKind::segment_alloc, bytes);
  std::uintptr_t base = 0;
  if (position < expected_count_ && expected_[position].kind == ReplayEventKind::segment_alloc &&
      expected_[position].size == bytes && expected_[position].addr != 0 &&
      !overlaps(expected_[position].addr, bytes)) {
    base = expected_[position].addr;  // PyTorch's own: best fit will break ties as it did
  } else {
    base = fresh_range(bytes);
  }
  held_[base] = bytes;
  reserved_ += bytes;
  return reinterpret_cast<void*>(base);
}

void ReplaySource::do_deallocate(void* ptr, std::size_t bytes) {
  if (held_.erase(reinterpret_cast<std::uintptr_t>(ptr)) == 0) {
    throw std::invalid_argument("replay source: free of a segment it did not hand out");
  }
  reserved_ -= bytes;
  called(ReplayEventKind::segment_free, bytes);
}

void* ReplaySource::do_reserve(std::size_t bytes) {
  const std::uintptr_t base = fresh_range(bytes);
  held_[base] = bytes;
  return reinterpret_cast<void*>(base);
}

void ReplaySource::do_release(void* base, std::size_t) { held_.erase(reinterpret_cast<std::uintptr_t>(base)); }

bool ReplaySource::do_map(void*, std::size_t bytes) {
  called(ReplayEventKind::segment_map, bytes);
  reserved_ += bytes;
  return true;  // the budget is the allocator's to keep
}

void ReplaySource::do_unmap(void*, std::size_t bytes) {
  called(ReplayEventKind::segment_unmap, bytes);
  reserved_ -= bytes;
}

}  // namespace oomlab::replay
