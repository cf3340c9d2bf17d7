// Hostile files cost little: a sparse file of zeros is refused from its first bytes, a gzip
// bomb stops at the first megabyte it inflates, and the file and the gunzipped pickle are read
// as streams: the one memory limit is on what the decoded values hold, not on the file's size.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "harness/memory/size.hpp"
#include "harness/replay/snapshot_file.hpp"
#include "harness/replay/tests/fixture_files.hpp"
#include "harness/replay/tests/peak_memory.hpp"
#include "harness/replay/tests/pickle_builder.hpp"

namespace oomlab::replay {
namespace {

using namespace oomlab::literals;
using testing::expect_one_line;
using testing::load_error;
using testing::peak_growth_of;

constexpr std::size_t kCheapBytes = 32_MiB;  // what refusing a hostile file may cost at most

std::string read_error(const std::vector<std::uint8_t>& bytes, const SnapshotReadLimits& limits = {}) {
  try {
    read_snapshot(bytes.data(), bytes.size(), "hostile.gz", limits);
  } catch (const SnapshotError& error) {
    return error.what();
  }
  return "(no error)";
}

std::vector<std::uint8_t> gzip(const std::string& text) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<std::uint8_t> out(deflateBound(&stream, text.size()));
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

class TempFile {
 public:
  TempFile() {
    char name[] = "/tmp/oomlab-hostile-XXXXXX";
    fd_ = mkstemp(name);
    path_ = name;
  }
  ~TempFile() {
    if (fd_ >= 0) close(fd_);
    std::remove(path_.c_str());
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

TEST(HostileFile, ASparseFileOfZerosIsRefusedFromItsFirstBytes) {
  TempFile file;
  ASSERT_GE(file.fd(), 0);
  ASSERT_EQ(ftruncate(file.fd(), static_cast<off_t>(2_GiB)), 0);  // 2 GiB, no blocks on disk
  std::string error;
  const auto cost = peak_growth_of([&] { error = load_error(file.path()); });
  expect_one_line(error, "byte 0: the file starts with 0x00");
  if (!cost) GTEST_SKIP() << "no VmHWM here";
  EXPECT_LT(*cost, kCheapBytes) << "the whole file was read before its first byte was checked";
}

TEST(HostileFile, AGzipBombStopsAtItsFirstBytes) {
  if (!snapshot_gzip_supported()) GTEST_SKIP() << "built without zlib";
  const std::vector<std::uint8_t> bomb = gzip(std::string(128_MiB, '\0'));  // ~128 KB
  ASSERT_LT(bomb.size(), 1_MiB);
  std::string error;
  const auto cost = peak_growth_of([&] { error = read_error(bomb); });
  expect_one_line(error, "'hostile.gz': gunzipped, byte 0: the file starts with 0x00");
  if (!cost) GTEST_SKIP() << "no VmHWM here";
  EXPECT_LT(*cost, kCheapBytes) << "the bomb was inflated before its first bytes were checked";
}

TEST(HostileFile, AGzipOfAHugeStrStopsAtItsLength) {
  if (!snapshot_gzip_supported()) GTEST_SKIP() << "built without zlib";
  // A pickle's start, then a 64 MiB str: refused from its length, before it is inflated.
  std::string pickle = "\x80\x04X";
  pickle += std::string("\x00\x00\x00\x04", 4) + std::string(64_MiB, 'a') + ".";
  std::string error;
  const std::vector<std::uint8_t> bomb = gzip(pickle);
  const auto cost = peak_growth_of([&] { error = read_error(bomb); });
  expect_one_line(error, "'hostile.gz': byte 2: BINUNICODE holds 64.00MiB, more than the 16.00MiB one string may have");
  if (!cost) GTEST_SKIP() << "no VmHWM here";
  EXPECT_LT(*cost, kCheapBytes);
}

TEST(HostileFile, OnlyWhatTheDecodedDataHoldsCountsAgainstTheLimit) {
  if (!snapshot_gzip_supported()) GTEST_SKIP() << "built without zlib";
  // 6 MiB inflated and decoded: the inflated bytes are a stream, so only the str counts.
  std::string pickle = "\x80\x04X";
  pickle += std::string("\x00\x00\x60\x00", 4) + std::string(6_MiB, 'a') + ".";
  SnapshotReadLimits limits;
  limits.max_memory_bytes = 8_MiB;
  expect_one_line(read_error(gzip(pickle), limits), "the pickle holds a str");
  limits.max_memory_bytes = 4_MiB;
  expect_one_line(read_error(gzip(pickle), limits),
                  "the decoded data would take more than 4.00MiB (the reader's memory limit)");
}

// A trace of `entries` entries, each with a str of `padding` bytes torch would not memoize
// (user_metadata): the file is mostly bytes a streamed read does not keep.
std::string padded_trace(std::size_t entries, std::size_t padding) {
  using namespace testing;
  std::string trace = "](";
  for (std::size_t i = 0; i < entries; ++i) {
    trace += py_dict({{"action", py_str(i % 2 == 0 ? "alloc" : "free_completed")},
                      {"addr", py_int(0x7f0000000000 + 512 * static_cast<std::int64_t>(i / 2))},
                      {"size", py_int(512)},
                      {"stream", py_int(0)},
                      {"user_metadata", py_str(std::string(padding, 'm'))}});
  }
  trace += "e";
  return pickled(py_dict({{"segments", py_list({})}, {"device_traces", py_list({trace})}}));
}

TEST(HostileFile, AFileLargerThanTheLimitIsReadAsAStream) {
  const std::string pickle = padded_trace(4000, 4096);  // 16 MiB of file
  TempFile file;
  ASSERT_GE(file.fd(), 0);
  ASSERT_EQ(write(file.fd(), pickle.data(), pickle.size()), static_cast<ssize_t>(pickle.size()));
  SnapshotReadLimits limits;
  limits.max_memory_bytes = 4_MiB;  // a quarter of the file: what is held counts, not its size
  std::size_t entries = 0;
  const auto cost = peak_growth_of([&] { entries = load_snapshot(file.path(), limits).device_traces.at(0).size(); });
  EXPECT_EQ(entries, 4000u);
  if (!cost) GTEST_SKIP() << "no VmHWM here";
  EXPECT_LT(*cost, 8_MiB) << "the file or its tree was held whole";
}

TEST(HostileFile, ATraceEntryGivenTwiceThroughTheMemoIsRefused) {
  using namespace testing;
  const std::string entry = py_dict({{"action", py_str("alloc")}, {"addr", py_int(4096)},
                                     {"size", py_int(512)}, {"stream", py_int(0)}});
  // The entry memoized, read (when the next one starts), then read back from the memo.
  const std::string trace = "](" + entry + "\x94" + entry + std::string("h\x00", 2) + "e";
  const std::string pickle =
      pickled(py_dict({{"segments", py_list({})}, {"device_traces", py_list({trace})}}));
  expect_one_line(read_error(bytes_of(pickle)), "a trace entry already read");
  // The same entry twice on the stack (DUP).
  const std::string dup = "](" + entry + "2" + "e";
  const std::string twice =
      pickled(py_dict({{"segments", py_list({})}, {"device_traces", py_list({dup})}}));
  expect_one_line(read_error(bytes_of(twice)), "this trace entry appears twice");
}

}  // namespace
}  // namespace oomlab::replay
