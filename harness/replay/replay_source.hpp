// The memory source a replay runs on: dry (no backing), with two jobs besides.
//  - It sees the allocator's segment decisions as PyTorch's trace records them: allocate is
//    cudaMalloc (segment_alloc), deallocate cudaFree (segment_free), map/unmap cuMemMap/cuMemUnmap
//    (segment_map/unmap). Each step's calls are compared, in order and by size, with PyTorch's.
//  - A segment that matches PyTorch's gets PyTorch's own address, so best fit, which breaks
//    ties by address, chooses among equal blocks as PyTorch did.
// Addresses that PyTorch never gave (after a divergence, expandable ranges) come from far above
// any real GPU address, and never overlap a range the source still holds.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/memory/source.hpp"
#include "harness/replay/replay_plan.hpp"

namespace oomlab::replay {

struct SegmentCall {
  ReplayEventKind kind = ReplayEventKind::segment_alloc;
  std::uint64_t size = 0;
};

// One step's comparison: where PyTorch's decisions and the allocator's calls first differ.
struct StepComparison {
  std::size_t mismatches = 0;        // positions where they differ (0: the step matched)
  std::size_t first = 0;             // the first such position
  const SegmentDecision* pytorch = nullptr;  // PyTorch's decision there; null: it made none
  bool oomlab_made_a_call = false;
  SegmentCall oomlab;                // the allocator's call there, when it made one
};

class ReplaySource final : public memory::MemorySource {
 public:
  // Starts a step whose PyTorch decisions are [first, first + count) (an empty range when the
  // replay is not compared).
  void begin_step(const SegmentDecision* first, std::size_t count);
  StepComparison end_step() const;
  // Bytes of segments and mapped pages held now: the allocator's reserved bytes, kept here so
  // a replay reads them after every request without the allocator's statistics walk.
  std::uint64_t reserved() const { return reserved_; }

 private:
  void* do_allocate(std::size_t bytes) override;
  void do_deallocate(void* ptr, std::size_t bytes) override;
  bool do_supports_expandable() const override { return true; }
  std::size_t do_page_granularity() const override { return kGranularity; }
  void* do_reserve(std::size_t bytes) override;
  void do_release(void* base, std::size_t bytes) override;
  bool do_map(void* address, std::size_t bytes) override;
  void do_unmap(void* address, std::size_t bytes) override;
  memory::EventHandle do_record_event(memory::StreamHandle) override { return ++last_event_; }
  bool do_event_complete(memory::EventHandle) override { return true; }
  void do_destroy_event(memory::EventHandle) override {}
  std::size_t do_external_bytes() const override { return 0; }
  std::string do_name() const override { return "dry"; }
  bool do_has_backing() const override { return false; }

  static constexpr std::size_t kGranularity = std::size_t{2} << 20;
  void called(ReplayEventKind kind, std::uint64_t size);
  std::uintptr_t fresh_range(std::size_t bytes);
  bool overlaps(std::uintptr_t base, std::size_t bytes) const;

  const SegmentDecision* expected_ = nullptr;
  std::size_t expected_count_ = 0;
  std::vector<SegmentCall> calls_;  // this step's
  std::map<std::uintptr_t, std::size_t> held_;  // base -> bytes: segments and reservations
  std::uint64_t reserved_ = 0;
  std::uintptr_t next_fresh_ = std::uintptr_t{1} << 60;
  memory::EventHandle last_event_ = 0;
};

}  // namespace oomlab::replay
