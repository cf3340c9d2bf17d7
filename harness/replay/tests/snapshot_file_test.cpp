// Files: gzip read within a cap, every failure one line that starts with the file's name.
#include "harness/replay/snapshot_file.hpp"

#include <gtest/gtest.h>

#include <string>

#include "harness/memory/size.hpp"
#include "harness/replay/tests/fixture_files.hpp"

namespace oomlab::replay {
namespace {

using namespace oomlab::literals;
using testing::expect_one_line;
using testing::load_error;
using testing::fixture_path;
using testing::read_fixture;

TEST(SnapshotFile, AGzippedSnapshotReadsLikeThePlainOne) {
  if (!snapshot_gzip_supported()) GTEST_SKIP() << "built without zlib";
  const Snapshot plain = load_snapshot(fixture_path("training_protocol4.pickle"));
  const Snapshot zipped = load_snapshot(fixture_path("training_protocol4.pickle.gz"));
  EXPECT_EQ(zipped.device_traces.at(0).size(), plain.device_traces.at(0).size());
  EXPECT_EQ(zipped.segments.size(), plain.segments.size());
}

TEST(SnapshotFile, GunzipStopsAtItsCap) {
  if (!snapshot_gzip_supported()) GTEST_SKIP() << "built without zlib";
  SnapshotReadLimits limits;
  limits.max_memory_bytes = 2_KiB;  // the gzip's 1292 bytes and less than its 4074 inflated
  expect_one_line(load_error(fixture_path("training_protocol4.pickle.gz"), limits),
                  "(the reader's memory limit)");
  // zeros_4MiB.gz (4 KiB that inflate to 4 MiB) stops at its first bytes, which are no pickle.
  expect_one_line(load_error(fixture_path("zeros_4MiB.gz")), "gunzipped, byte 0: the file starts with 0x00");
}

TEST(SnapshotFile, ATruncatedGzipIsNamed) {
  if (!snapshot_gzip_supported()) GTEST_SKIP() << "built without zlib";
  const std::vector<std::uint8_t> whole = read_fixture("training_protocol4.pickle.gz");
  const std::vector<std::uint8_t> cut(whole.begin(), whole.begin() + whole.size() / 2);
  try {
    read_snapshot(cut.data(), cut.size(), "cut.pickle.gz");
    FAIL();
  } catch (const SnapshotError& error) {
    expect_one_line(error.what(), "'cut.pickle.gz': is a damaged or truncated gzip file");
  }
}

TEST(SnapshotFile, ErrorsStartWithTheFileName) {
  const std::string refused = load_error(fixture_path("bad_refuse_REDUCE.pickle"));
  EXPECT_EQ(refused.rfind("'" + fixture_path("bad_refuse_REDUCE.pickle").substr(0, 100), 0), 0u)
      << refused;
  expect_one_line(refused, ": byte 4: opcode REDUCE (0x52)");
  expect_one_line(load_error(fixture_path("no_such_file.pickle")),
                  "cannot be opened: No such file");
  expect_one_line(load_error(OOMLAB_REPLAY_FIXTURES), "is not a regular file");
  SnapshotReadLimits small;
  small.max_memory_bytes = 100;
  expect_one_line(load_error(fixture_path("training_protocol4.pickle"), small),
                  "the decoded data would take more than 100B (the reader's memory limit)");
}

TEST(SnapshotFile, SnapshotErrorsAreNamedToo) {
  expect_one_line(load_error(fixture_path("legacy_segment_list.pickle")),
                  "legacy_segment_list.pickle': the pickle holds a list");
}

}  // namespace
}  // namespace oomlab::replay
