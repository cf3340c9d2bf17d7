// The replay's event list: frees at free_completed, empty_cache calls found among releases,
// PyTorch's decisions kept beside the requests, and the traces a replay cannot use refused.
#include "harness/replay/snapshot_events.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/replay/snapshot_parse.hpp"
#include "harness/replay/tests/fixture_files.hpp"

namespace oomlab::replay {
namespace {

using namespace oomlab::literals;
using namespace oomlab::replay::testing;

std::vector<DeviceEvents> events_of(const std::string& fixture) {
  return snapshot_events(parse_snapshot(decode(read_fixture(fixture))));
}

std::vector<ReplayEventKind> kinds(const DeviceEvents& device) {
  std::vector<ReplayEventKind> out;
  for (const ReplayEvent& event : device.events) out.push_back(event.kind);
  return out;
}

std::size_t count(const DeviceEvents& device, ReplayEventKind kind) {
  std::size_t n = 0;
  for (const ReplayEvent& event : device.events) n += event.kind == kind;
  return n;
}

std::string events_error(const Snapshot& snapshot) {
  try {
    snapshot_events(snapshot);
  } catch (const SnapshotError& error) {
    return error.what();
  }
  return "(no error)";
}

TraceEntry entry(TraceAction action, std::uint64_t addr, std::uint64_t size,
                 StackId frames = kNoFrames) {
  TraceEntry e;
  e.action = action;
  e.addr = addr;
  e.size = size;
  e.frames = frames;
  return e;
}

TEST(SnapshotEvents, EveryFreeFindsItsAllocAndTheTraceIsWhole) {
  const std::vector<DeviceEvents> devices = events_of("training_protocol4.pickle");
  ASSERT_EQ(devices.size(), 1u);
  const DeviceEvents& device = devices[0];
  EXPECT_EQ(device.device, 0);
  EXPECT_EQ(device.allocs, 21u);  // 3 weights + 3 steps of 6
  EXPECT_EQ(device.frees, 18u);
  EXPECT_EQ(device.empty_caches, 0u);
  EXPECT_FALSE(device.starts_mid_run());
  for (const ReplayEvent& event : device.events) {
    if (event.kind != ReplayEventKind::free && event.kind != ReplayEventKind::free_requested)
      continue;
    ASSERT_NE(event.alloc_event, kNoEvent);
    const ReplayEvent& alloc = device.events[event.alloc_event];
    EXPECT_EQ(alloc.kind, ReplayEventKind::alloc);
    EXPECT_EQ(alloc.addr, event.addr);
    EXPECT_EQ(alloc.size, event.size);  // free_* carry the requested size, as alloc does
    EXPECT_LT(alloc.trace_index, event.trace_index);
  }
}

TEST(SnapshotEvents, ACrossStreamFreeReturnsAtFreeCompletedNotAtTheRequest) {
  const DeviceEvents device = events_of("record_stream.pickle").at(0);
  // alloc a, alloc c, free_requested a, free_requested c, free c, free a, ...
  const std::vector<ReplayEventKind> all = kinds(device);
  ASSERT_GE(all.size(), 7u);
  const std::vector<ReplayEventKind> head(all.begin(), all.begin() + 7);
  const std::vector<ReplayEventKind> expected = {ReplayEventKind::segment_alloc,
                                                 ReplayEventKind::alloc,
                                                 ReplayEventKind::alloc,
                                                 ReplayEventKind::free_requested,
                                                 ReplayEventKind::free_requested,
                                                 ReplayEventKind::free,
                                                 ReplayEventKind::free};
  EXPECT_EQ(head, expected);
  EXPECT_EQ(device.events[3].addr, device.events[6].addr);  // a: requested first, back last
  EXPECT_EQ(device.events[6].alloc_event, 1u);
}

TEST(SnapshotEvents, EmptyCacheIsFoundByItsFramesOrBecauseNoRequestFollows) {
  for (const char* fixture : {"empty_cache_frames.pickle", "empty_cache_no_frames.pickle"}) {
    const DeviceEvents device = events_of(fixture).at(0);
    ASSERT_EQ(device.empty_caches, 1u) << fixture;
    const std::vector<ReplayEventKind> all = kinds(device);
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i] != ReplayEventKind::empty_cache) continue;
      ASSERT_LT(i + 1, all.size());
      EXPECT_EQ(all[i + 1], ReplayEventKind::segment_free) << fixture;
      EXPECT_EQ(device.events[i].trace_index, device.events[i + 1].trace_index);
    }
  }
}

TEST(SnapshotEvents, ReleasesThatARequestMadeAreNotEmptyCache) {
  const DeviceEvents device = events_of("oom_fragmentation.pickle").at(0);
  EXPECT_EQ(device.empty_caches, 0u);
  EXPECT_EQ(device.ooms, 1u);
  const ReplayEvent& oom = device.events.back();
  EXPECT_EQ(oom.kind, ReplayEventKind::oom);
  EXPECT_EQ(oom.size, 30_MiB);
  EXPECT_EQ(oom.device_free, 24_MiB);
  EXPECT_EQ(device.events[device.events.size() - 2].kind, ReplayEventKind::segment_free);
}

TEST(SnapshotEvents, WithoutFramesAnEmptyCacheRightBeforeAnAllocationReadsAsARetry) {
  Snapshot snapshot;
  snapshot.device_traces.push_back(
      {entry(TraceAction::segment_alloc, 0x1000, 2_MiB), entry(TraceAction::alloc, 0x1000, 512),
       entry(TraceAction::free_requested, 0x1000, 512),
       entry(TraceAction::free_completed, 0x1000, 512),
       entry(TraceAction::segment_free, 0x1000, 2_MiB),  // empty_cache(), or a retry? no frames
       entry(TraceAction::segment_alloc, 0x9000, 20_MiB),
       entry(TraceAction::alloc, 0x9000, 4_MiB)});
  EXPECT_EQ(snapshot_events(snapshot).at(0).empty_caches, 0u);  // the documented ambiguity

  // The same with torch.cuda.empty_cache's frame on the release: an empty_cache.
  const FrameId call =
      snapshot.stacks.add_frame({"/venv/lib/torch/cuda/memory.py", 222, "empty_cache"});
  const FrameId user = snapshot.stacks.add_frame({"train.py", 9, "main"});
  snapshot.device_traces[0][4].frames = snapshot.stacks.add_stack({call, user});
  EXPECT_EQ(snapshot_events(snapshot).at(0).empty_caches, 1u);
}

TEST(SnapshotEvents, ExpandableSegmentsKeepMapAndUnmap) {
  const DeviceEvents device = events_of("expandable_segments.pickle").at(0);
  EXPECT_EQ(count(device, ReplayEventKind::segment_map), 2u);
  EXPECT_EQ(count(device, ReplayEventKind::segment_unmap), 1u);
  EXPECT_EQ(device.empty_caches, 1u);  // the unmap's frames are empty_cache's
  EXPECT_EQ(device.allocs_outside_segments, 0u);
  EXPECT_FALSE(device.starts_mid_run());
}

TEST(SnapshotEvents, ATraceCutByTheRingBufferSaysSo) {
  const DeviceEvents device = events_of("mid_run_trace.pickle").at(0);
  EXPECT_TRUE(device.starts_mid_run());
  EXPECT_GT(device.frees_before_trace, 0u);
  EXPECT_GT(device.allocs_outside_segments, 0u);
}

TEST(SnapshotEvents, NoHistoryIsAnErrorThatSaysHowToRecord) {
  for (const char* fixture : {"no_history.pickle", "state_only_history.pickle"}) {
    const std::string message = events_error(parse_snapshot(decode(read_fixture(fixture))));
    expect_one_line(message, "no allocation history to replay");
    expect_one_line(message, "torch.cuda.memory._record_memory_history(max_entries=");
  }
}

TEST(SnapshotEvents, ContradictionsAndSkippedFreesAreRefused) {
  Snapshot skipped;
  skipped.device_traces.push_back(
      {entry(TraceAction::alloc, 0x1000, 512), entry(TraceAction::free_requested, 0x1000, 512)});
  expect_one_line(events_error(skipped),
                  "device_traces[0]: 1 free_requested entries and no free_completed");

  Snapshot twice;
  twice.device_traces.push_back(
      {entry(TraceAction::alloc, 0x1000, 512), entry(TraceAction::alloc, 0x1000, 512)});
  expect_one_line(
      events_error(twice),
      "device_traces[0][1]: alloc of 512 bytes at 0x1000 overlaps the block allocated at 0x1000 by entry 0");
}

TEST(SnapshotEvents, UnknownActionsAreCountedAndDevicesKeepTheirIndex) {
  const DeviceEvents newer = events_of("newer_torch_keys.pickle").at(0);
  EXPECT_EQ(newer.skipped_entries, 1u);

  Snapshot two_gpus;
  two_gpus.device_traces.resize(2);
  two_gpus.device_traces[1] = {entry(TraceAction::alloc, 0x1000, 512)};
  const std::vector<DeviceEvents> devices = snapshot_events(two_gpus);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].device, 1);
  EXPECT_EQ(devices[0].allocs_outside_segments, 1u);  // no segment_alloc seen for it
}

}  // namespace
}  // namespace oomlab::replay
