// Hostile files cost little: a sparse file of zeros is refused from its first bytes, a gzip
// bomb stops at the first megabyte it inflates, and the file, the gunzipped pickle and the
// decoded values share one memory limit instead of one cap each.
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

TEST(HostileFile, AGzipThatInflatesPastTheLimitStopsThere) {
  if (!snapshot_gzip_supported()) GTEST_SKIP() << "built without zlib";
  // A pickle's start, then a long str: the gunzip cap is what stops it.
  std::string pickle = "\x80\x04X";
  pickle += std::string("\x00\x00\x00\x04", 4) + std::string(64_MiB, 'a') + ".";
  SnapshotReadLimits limits;
  limits.max_memory_bytes = 16_MiB;
  std::string error;
  const std::vector<std::uint8_t> bomb = gzip(pickle);
  const auto cost = peak_growth_of([&] { error = read_error(bomb, limits); });
  expect_one_line(error, "decompresses to more than");
  expect_one_line(error, "(the reader's memory limit)");
  if (!cost) GTEST_SKIP() << "no VmHWM here";
  EXPECT_LT(*cost, kCheapBytes);
}

TEST(HostileFile, TheGunzippedPickleAndItsDecodedDataShareOneLimit) {
  if (!snapshot_gzip_supported()) GTEST_SKIP() << "built without zlib";
  // 6 MiB inflated, 6 MiB more decoded: each under an 8 MiB limit, together over it.
  std::string pickle = "\x80\x04X";
  pickle += std::string("\x00\x00\x60\x00", 4) + std::string(6_MiB, 'a') + ".";
  SnapshotReadLimits limits;
  limits.max_memory_bytes = 8_MiB;
  expect_one_line(read_error(gzip(pickle), limits),
                  "the file's bytes and its decoded data would take more than 8.00MiB (the reader's memory limit)");
  limits.max_memory_bytes = 16_MiB;  // room for both: the str is read (and is no snapshot dict)
  expect_one_line(read_error(gzip(pickle), limits), "the pickle holds a str");
}

TEST(HostileFile, AFileBeyondTheLimitIsRefusedBeforeItIsRead) {
  TempFile file;
  ASSERT_GE(file.fd(), 0);
  ASSERT_EQ(write(file.fd(), "\x80\x04", 2), 2);
  ASSERT_EQ(ftruncate(file.fd(), static_cast<off_t>(64_MiB)), 0);
  SnapshotReadLimits limits;
  limits.max_memory_bytes = 1_MiB;
  expect_one_line(load_error(file.path(), limits), "holds 64.00MiB, more than the reader's memory limit of 1.00MiB");
}

}  // namespace
}  // namespace oomlab::replay
