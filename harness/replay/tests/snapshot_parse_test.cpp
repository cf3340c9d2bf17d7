// Snapshot-shaped pickles (written by fixtures/make_fixtures.py with torch's dict layout) read as
// typed snapshots; hand-built dicts for each required key and type.
#include "harness/replay/snapshot_parse.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/replay/tests/fixture_files.hpp"
#include "harness/replay/tests/pickle_builder.hpp"

namespace oomlab::replay {
namespace {

using namespace oomlab::literals;
using namespace oomlab::replay::testing;

constexpr std::uint64_t kBase = 0x7F3A00000000;  // make_fixtures.py's BASE_ADDRESS
constexpr std::int64_t kTime0 = 1730000000000000;

Snapshot parse_fixture(const std::string& name) {
  return parse_snapshot(decode(read_fixture(name)));
}

std::string parse_error(const std::string& pickle_value) {
  try {
    parse_snapshot(decode(bytes_of(pickled(pickle_value))));
  } catch (const SnapshotError& error) {
    return error.what();
  }
  return "(no error)";
}

std::vector<TraceAction> actions(const std::vector<TraceEntry>& trace) {
  std::vector<TraceAction> out;
  for (const TraceEntry& entry : trace) out.push_back(entry.action);
  return out;
}

TEST(SnapshotParse, TheTrainingTraceReadsTheSameInEveryProtocol) {
  const Snapshot reference = parse_fixture("training_protocol4.pickle");
  for (const char* name :
       {"training_protocol2.pickle", "training_protocol3.pickle", "training_protocol5.pickle"}) {
    const Snapshot other = parse_fixture(name);
    ASSERT_EQ(other.device_traces.size(), reference.device_traces.size()) << name;
    EXPECT_EQ(actions(other.device_traces[0]), actions(reference.device_traces[0])) << name;
    ASSERT_EQ(other.segments.size(), reference.segments.size()) << name;
    EXPECT_EQ(other.stacks.stack_count(), reference.stacks.stack_count()) << name;
  }
  EXPECT_EQ(reference.pickle_protocol, 4);
}

TEST(SnapshotParse, TraceEntriesCarryTorchsFields) {
  const Snapshot snapshot = parse_fixture("training_protocol4.pickle");
  ASSERT_EQ(snapshot.device_traces.size(), 1u);
  const std::vector<TraceEntry>& trace = snapshot.device_traces[0];
  ASSERT_GE(trace.size(), 3u);
  EXPECT_EQ(trace[0].action, TraceAction::segment_alloc);
  EXPECT_EQ(trace[0].addr, kBase);
  EXPECT_EQ(trace[0].size, 20_MiB);
  EXPECT_EQ(trace[0].stream, 0);
  EXPECT_EQ(trace[0].time_us, kTime0 + 7);
  EXPECT_EQ(trace[1].action, TraceAction::alloc);
  EXPECT_EQ(trace[1].size, 4_MiB);

  // The weight's stack: a C++ frame, then Python's, innermost first.
  const std::vector<FrameId>& frames = snapshot.stacks.stack(trace[1].frames);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(snapshot.stacks.frame(frames[0]).filename, "??");
  EXPECT_EQ(snapshot.stacks.frame(frames[1]).name, "forward");
  EXPECT_EQ(snapshot.stacks.frame(frames[1]).line, 125);
  EXPECT_EQ(snapshot.stacks.frame(frames[2]).filename, "train.py");
  // Stacks are stored once: the trace's many allocations come from a handful of places.
  EXPECT_LE(snapshot.stacks.stack_count(), 5u);
}

TEST(SnapshotParse, SegmentsAndBlocksAtTheEnd) {
  const Snapshot snapshot = parse_fixture("training_protocol4.pickle");
  ASSERT_EQ(snapshot.segments.size(), 2u);
  const Segment& large = snapshot.segments[0];
  EXPECT_EQ(large.address, kBase);
  EXPECT_EQ(large.total_size, 20_MiB);
  EXPECT_EQ(large.type, SegmentType::large);
  EXPECT_TRUE(large.pool.is_default());
  EXPECT_FALSE(large.is_expandable);
  ASSERT_EQ(large.blocks.size(), 3u);
  EXPECT_EQ(large.blocks[0].state, BlockState::active_allocated);
  EXPECT_EQ(large.blocks[0].size, 4_MiB);
  EXPECT_EQ(large.blocks[2].state, BlockState::inactive);
  EXPECT_EQ(large.allocated_size, 8_MiB);
  std::uint64_t tiled = 0;
  for (const Block& block : large.blocks) {
    EXPECT_EQ(block.address, large.address + tiled);
    tiled += block.size;
  }
  EXPECT_EQ(tiled, large.total_size);
  EXPECT_EQ(snapshot.segments[1].type, SegmentType::small);
  // The block and its alloc entry share one frames list in the pickle, so one stack here.
  EXPECT_EQ(large.blocks[0].frames, snapshot.device_traces[0][1].frames);
}

TEST(SnapshotParse, DefaultAllocatorSettings) {
  const Snapshot snapshot = parse_fixture("training_protocol4.pickle");
  ASSERT_TRUE(snapshot.allocator_settings);
  const AllocatorSettings& settings = *snapshot.allocator_settings;
  EXPECT_EQ(settings.alloc_conf, "");
  EXPECT_FALSE(settings.max_split_size);  // -1: unlimited
  EXPECT_EQ(settings.garbage_collection_threshold, 0.0);
  EXPECT_FALSE(settings.expandable_segments);
  ASSERT_EQ(settings.roundup_power2_divisions.size(), 16u);
  EXPECT_EQ(settings.roundup_power2_divisions.front().from_mib, 1u);
  EXPECT_EQ(settings.roundup_power2_divisions.back().from_mib, 32768u);
}

TEST(SnapshotParse, TheOomRunsSettingsAndItsOom) {
  const Snapshot snapshot = parse_fixture("oom_fragmentation.pickle");
  const AllocatorSettings& settings = *snapshot.allocator_settings;
  EXPECT_EQ(settings.max_split_size, 128_MiB);
  EXPECT_DOUBLE_EQ(settings.garbage_collection_threshold, 0.6);
  EXPECT_NE(settings.alloc_conf.find("max_split_size_mb:128"), std::string::npos);
  ASSERT_EQ(settings.roundup_power2_divisions.size(), 16u);
  EXPECT_EQ(settings.roundup_power2_divisions[8].from_mib, 256u);
  EXPECT_EQ(settings.roundup_power2_divisions[8].divisions, 1u);
  EXPECT_EQ(settings.roundup_power2_divisions[9].divisions, 2u);
  EXPECT_EQ(settings.roundup_power2_divisions[0].divisions, 0u);

  const TraceEntry& oom = snapshot.device_traces[0].back();
  EXPECT_EQ(oom.action, TraceAction::oom);
  EXPECT_EQ(oom.size, 30_MiB);         // the rounded request
  EXPECT_EQ(oom.device_free, 24_MiB);  // in place of addr
  EXPECT_EQ(oom.addr, 0u);
  EXPECT_EQ(snapshot.device_traces[0][snapshot.device_traces[0].size() - 2].action,
            TraceAction::segment_free);  // released cache first, then gave up
}

TEST(SnapshotParse, ExpandableSegmentsMapAndUnmap) {
  const Snapshot snapshot = parse_fixture("expandable_segments.pickle");
  ASSERT_EQ(snapshot.segments.size(), 1u);
  EXPECT_TRUE(snapshot.segments[0].is_expandable);
  EXPECT_TRUE(snapshot.allocator_settings->expandable_segments);
  EXPECT_EQ(snapshot.allocator_settings->alloc_conf, "expandable_segments:True");
  const std::vector<TraceAction> expected = {
      TraceAction::segment_map,  TraceAction::alloc,          TraceAction::segment_map,
      TraceAction::alloc,        TraceAction::free_requested, TraceAction::free_completed,
      TraceAction::segment_unmap};
  EXPECT_EQ(actions(snapshot.device_traces[0]), expected);
}

TEST(SnapshotParse, NewerTorchKeysAndActionsAreSkippedNotRefused) {
  const Snapshot snapshot = parse_fixture("newer_torch_keys.pickle");
  ASSERT_EQ(snapshot.other_actions.size(), 1u);
  EXPECT_EQ(snapshot.other_actions[0], "annotate");
  std::size_t others = 0;
  for (const TraceEntry& entry : snapshot.device_traces[0]) {
    if (entry.action == TraceAction::other) ++others;
  }
  EXPECT_EQ(others, 1u);
}

TEST(SnapshotParse, ANonUtf8FileNameIsKeptReadable) {
  const Snapshot snapshot = parse_fixture("surrogate_filename.pickle");
  const TraceEntry& alloc = snapshot.device_traces[0][1];
  ASSERT_EQ(alloc.action, TraceAction::alloc);
  const Frame& frame = snapshot.stacks.frame(snapshot.stacks.stack(alloc.frames).at(0));
  EXPECT_EQ(frame.filename, "/data/caf\xef\xbf\xbd.py");  // U+FFFD for the lone surrogate
}

TEST(SnapshotParse, HistoryOffStillReads) {
  const Snapshot snapshot = parse_fixture("no_history.pickle");
  ASSERT_EQ(snapshot.device_traces.size(), 2u);
  EXPECT_TRUE(snapshot.device_traces[0].empty());
  EXPECT_FALSE(snapshot.segments.empty());
}

TEST(SnapshotParse, TheOlderListOfSegmentsIsNamed) {
  try {
    parse_fixture("legacy_segment_list.pickle");
    FAIL();
  } catch (const SnapshotError& error) {
    expect_one_line(error.what(), "torch.cuda.memory_snapshot() returns");
  }
  expect_one_line(parse_error(py_int(3)), "the pickle holds an int, not the dict");
}

// A minimal valid segment with one block, with `extra` entries appended or replacing keys.
std::string segment(const std::vector<std::pair<std::string, std::string>>& replace = {},
                    const std::string& block = py_dict({{"size", py_int(512)},
                                                        {"state", py_str("inactive")}})) {
  std::vector<std::pair<std::string, std::string>> entries = {{"address", py_int(4096)},
                                                              {"total_size", py_int(512)},
                                                              {"stream", py_int(0)},
                                                              {"segment_type", py_str("small")},
                                                              {"blocks", py_list({block})}};
  for (const auto& [key, value] : replace) {
    bool replaced = false;
    for (auto& entry : entries) {
      if (entry.first == key) {
        entry.second = value;
        replaced = true;
      }
    }
    if (!replaced) entries.emplace_back(key, value);
  }
  std::vector<std::pair<std::string, std::string>> kept;
  for (const auto& entry : entries) {
    if (entry.second != "-") kept.push_back(entry);
  }
  return py_dict(kept);
}

std::string root_with(const std::string& segment_value, const std::string& trace = py_list({})) {
  return py_dict({{"segments", py_list({segment_value})}, {"device_traces", py_list({trace})}});
}

TEST(SnapshotParse, OptionalKeysTakeTorchsMeaning) {
  const Snapshot snapshot = parse_snapshot(decode(bytes_of(pickled(root_with(segment())))));
  ASSERT_EQ(snapshot.segments.size(), 1u);
  const Block& block = snapshot.segments[0].blocks.at(0);
  EXPECT_EQ(block.address, 4096u);        // the segment's address plus the blocks before
  EXPECT_EQ(block.requested_size, 512u);  // = size
  EXPECT_EQ(block.frames, kNoFrames);
  EXPECT_FALSE(snapshot.allocator_settings);
}

TEST(SnapshotParse, MissingAndMistypedKeysAreNamedWithTheirPlace) {
  expect_one_line(parse_error(py_dict({{"device_traces", py_list({})}})),
                  "the dict has no 'segments': not a torch memory snapshot");
  expect_one_line(parse_error(root_with(segment({{"total_size", "-"}}))),
                  "segments[0]: the segment has no 'total_size' (dict at byte");
  expect_one_line(parse_error(root_with(segment({{"total_size", py_str("big")}}))),
                  "segments[0]: 'total_size' is a str, expected a non-negative int");
  expect_one_line(parse_error(root_with(segment({{"total_size", py_int(-1)}}))),
                  "'total_size' is an int below zero, expected a non-negative int");
  expect_one_line(parse_error(root_with(segment({{"segment_type", py_str("huge")}}))),
                  "'segment_type' is 'huge', expected 'large' or 'small'");
  expect_one_line(parse_error(root_with(
                      segment({}, py_dict({{"size", py_int(1)}, {"state", py_str("gone")}})))),
                  "segments[0].blocks[0]: 'state' is 'gone'");
  expect_one_line(parse_error(root_with(segment({{"frames", py_int(1)}}))),
                  "'frames' is an int, expected a list of frames");
  expect_one_line(
      parse_error(root_with(segment({{"frames", py_list({py_dict({{"line", py_int(1)}})})}}))),
      "segments[0]: the frame has no 'filename'");

  const std::string no_addr =
      py_list({py_dict({{"action", py_str("alloc")}, {"size", py_int(8)}, {"stream", py_int(0)}})});
  expect_one_line(parse_error(root_with(segment(), no_addr)),
                  "device_traces[0][0]: the 'alloc' entry has no 'addr'");
  const std::string oom = py_list({py_dict({{"action", py_str("oom")},
                                            {"addr", py_int(0)},
                                            {"size", py_int(8)},
                                            {"stream", py_int(0)}})});
  expect_one_line(parse_error(root_with(segment(), oom)), "the 'oom' entry has no 'device_free'");
  expect_one_line(
      parse_error(py_dict({{"segments", py_list({})}, {"device_traces", py_list({py_int(1)})}})),
      "device_traces[0]: is an int, expected a list of trace entries");
}

TEST(SnapshotParse, UserTextInMessagesIsQuotedAndCapped) {
  const std::string long_type = std::string(5000, 'x') + "\n";
  const std::string message =
      parse_error(root_with(segment({{"segment_type", py_str(long_type)}})));
  expect_one_line(message, "(5001 chars)");
}

}  // namespace
}  // namespace oomlab::replay
