// Traces no real run writes are refused in one line naming the entry, never replayed into a
// silent wrong answer: an alloc inside a block still live, a range that passes the end of the
// address space, a segment or a reserved total beyond any GPU (sums of which wrapped, printing
// "PyTorch's 1B"), a negative --device.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/replay/replay_report.hpp"
#include "harness/replay/tests/fixture_files.hpp"

namespace oomlab::replay {
namespace {

using namespace oomlab::literals;
using testing::expect_one_line;

TraceEntry entry(TraceAction action, std::uint64_t addr, std::uint64_t size) {
  TraceEntry e;
  e.action = action;
  e.addr = addr;
  e.size = size;
  return e;
}

Snapshot trace_of(std::vector<TraceEntry> entries) {
  Snapshot snapshot;
  snapshot.device_traces.push_back(std::move(entries));
  return snapshot;
}

std::string analyse_error(const Snapshot& snapshot, const ReplayRequest& request = {}) {
  try {
    analyse_snapshot(snapshot, request);
  } catch (const SnapshotError& error) {
    return error.what();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "(no error)";
}

constexpr std::uint64_t kBase = 0x7f0000000000;

TEST(ImpossibleTrace, AnAllocInsideALiveBlockIsRefused) {
  const Snapshot inside = trace_of({entry(TraceAction::segment_alloc, kBase, 2_MiB),
                                    entry(TraceAction::alloc, kBase, 1_MiB),
                                    entry(TraceAction::alloc, kBase + 4096, 512)});
  expect_one_line(analyse_error(inside),
                  "device_traces[0][2]: alloc of 512 bytes at 0x7f0000001000 overlaps the block allocated at "
                  "0x7f0000000000 by entry 1");
  // Reaching into the next live block counts too; touching it does not.
  const Snapshot into_next = trace_of({entry(TraceAction::segment_alloc, kBase, 2_MiB),
                                       entry(TraceAction::alloc, kBase + 1_MiB, 512),
                                       entry(TraceAction::alloc, kBase + 1_MiB - 512, 1024)});
  expect_one_line(analyse_error(into_next), "device_traces[0][2]: alloc of 1024 bytes");
  const Snapshot touching = trace_of({entry(TraceAction::segment_alloc, kBase, 2_MiB),
                                      entry(TraceAction::alloc, kBase + 1_MiB, 512),
                                      entry(TraceAction::alloc, kBase + 1_MiB - 512, 512)});
  EXPECT_EQ(analyse_error(touching), "(no error)");
}

TEST(ImpossibleTrace, AFreedBlocksPlaceCanBeAllocatedAgain) {
  const Snapshot reused = trace_of({entry(TraceAction::segment_alloc, kBase, 2_MiB),
                                    entry(TraceAction::alloc, kBase, 1_MiB),
                                    entry(TraceAction::free_requested, kBase, 1_MiB),
                                    entry(TraceAction::free_completed, kBase, 1_MiB),
                                    entry(TraceAction::alloc, kBase + 4096, 512)});
  EXPECT_EQ(analyse_error(reused), "(no error)");
}

TEST(ImpossibleTrace, ASegmentBeyondAnyGpuIsRefused) {
  const Snapshot huge = trace_of({entry(TraceAction::segment_alloc, 0, UINT64_MAX),
                                  entry(TraceAction::alloc, 0, 512)});
  expect_one_line(analyse_error(huge),
                  "device_traces[0][0]: 'segment_alloc' of 18446744073709551615 bytes is more than any GPU holds");
}

TEST(ImpossibleTrace, ARangePastTheEndOfTheAddressSpaceIsRefused) {
  const Snapshot wraps = trace_of({entry(TraceAction::segment_alloc, UINT64_MAX - 4095, 2_MiB),
                                   entry(TraceAction::alloc, UINT64_MAX - 4095, 512)});
  expect_one_line(analyse_error(wraps),
                  "device_traces[0][0]: 'segment_alloc' of 2097152 bytes at 0xfffffffffffff000 ends past the end");
  const Snapshot free_wraps = trace_of({entry(TraceAction::alloc, kBase, 512),
                                        entry(TraceAction::free_completed, UINT64_MAX, 2)});
  expect_one_line(analyse_error(free_wraps), "device_traces[0][1]: 'free_completed' of 2 bytes");
}

TEST(ImpossibleTrace, ReservedBytesBeyondAnyGpuAreRefused) {
  // Each segment is possible; 2048 of 1 TiB held at once are not (the sum passed int64 before).
  std::vector<TraceEntry> entries;
  for (std::uint64_t i = 0; i < 2048; ++i) {
    entries.push_back(entry(TraceAction::segment_alloc, (i + 1) << 41, 1ULL << 40));
  }
  entries.push_back(entry(TraceAction::alloc, 1ULL << 41, 512));
  expect_one_line(analyse_error(trace_of(entries)), "PyTorch's reserved bytes would pass 1125899906842624 bytes");
  Snapshot segments = trace_of({entry(TraceAction::alloc, kBase, 512)});
  Segment segment;
  segment.total_size = UINT64_MAX;
  segments.segments.push_back(segment);
  expect_one_line(analyse_error(segments), "segments[0]: the segments' total_size would pass");
}

TEST(ImpossibleTrace, AnOomOfAnySizeIsReplayedWithoutWrapping) {
  // A request no GPU holds fails in PyTorch too: a real trace; its sums must not wrap.
  Snapshot oom = trace_of({entry(TraceAction::segment_alloc, kBase, 2_MiB), entry(TraceAction::alloc, kBase, 512),
                           entry(TraceAction::oom, 0, UINT64_MAX)});
  const ReplayReport report = analyse_snapshot(oom, {});
  EXPECT_EQ(report.pytorch_peak_reserved, 2_MiB);
  EXPECT_GE(report.budget_range.low, 2_MiB);
  oom.device_traces[0][2].device_free = UINT64_MAX;
  expect_one_line(analyse_error(oom), "device_traces[0][2]: 'oom' says the device had 18446744073709551615 bytes free");
}

TEST(ImpossibleTrace, ANegativeDeviceIsRefused) {
  const Snapshot one = trace_of({entry(TraceAction::alloc, kBase, 512)});
  ReplayRequest request;
  request.device = -2;
  expect_one_line(analyse_error(one, request), "--device -2: not a device index");
  request.device = 3;
  expect_one_line(analyse_error(one, request), "--device 3: the snapshot has no trace for it (traced: 0)");
}

}  // namespace
}  // namespace oomlab::replay
