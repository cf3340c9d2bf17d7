// The allocator's segments and live blocks as its trace events build them: what PyTorch's
// memory snapshot shows (segments, blocks in use, free-but-reserved gaps). The trace keeps one
// for "now" (the OOM dump) and one for the moment before its oldest kept event, so a reader of
// the kept events can replay them from the right start (report's segment view at the peak).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

#include "harness/memory/source.hpp"
#include "harness/memory/tags.hpp"

namespace oomlab::memory {

struct TraceEvent;

struct SegmentState {
  std::size_t mapped = 0;  // bytes the segment holds from the source (grows for expandable ones)
  StreamHandle stream = 0;
};

struct BlockState {
  std::size_t bytes = 0;  // rounded size
  Tag tag = Tag::other;
  std::uint32_t site = 0;      // Trace::site_name
  std::uint64_t sequence = 0;  // the alloc event's
};

class TraceState {
 public:
  using BlockKey = std::pair<std::uint32_t, std::size_t>;  // (segment, offset)

  // Applies an alloc, free, segment_map or segment_unmap; other kinds change nothing.
  void apply(const TraceEvent& event);

  const std::map<std::uint32_t, SegmentState>& segments() const { return segments_; }
  const std::map<BlockKey, BlockState>& blocks() const { return blocks_; }
  std::size_t reserved() const { return reserved_; }
  std::size_t allocated() const { return allocated_; }

 private:
  std::map<std::uint32_t, SegmentState> segments_;
  std::map<BlockKey, BlockState> blocks_;
  std::size_t reserved_ = 0;
  std::size_t allocated_ = 0;
};

}  // namespace oomlab::memory
