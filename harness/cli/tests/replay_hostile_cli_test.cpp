// oomlab replay on hostile snapshots, made in the test: control bytes in frame names reach the
// terminal escaped, a path that is not UTF-8 still gives JSON, impossible traces and a snapshot
// too large for memory are one error line and exit 2 (bad input), never exit 1 or a crash.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/replay/tests/pickle_builder.hpp"
#include "harness/runner/atomic_file.hpp"

namespace oomlab::cli_test {
namespace {

using namespace oomlab::replay::testing;

constexpr std::uint64_t kBase = 0x7f0000000000;
// ESC ] (an OSC title), BEL, CR LF forging a line, and a NUL that would cut the rest off.
const std::string kHostileFile = std::string("evil\x1b]0;pwned\x07\r\nforged.py\0tail", 30);
const std::string kHostileName = std::string("step\x1b[2J\x7f", 9);

// LONG1 with 9 bytes: any uint64, 2^64 - 1 included (py_int's 8 bytes are signed).
std::string py_uint(std::uint64_t value) { return std::string("\x8a\x09", 2) + le_bytes(value, 8) + '\0'; }

std::string frames() {
  return py_list({py_dict({{"filename", py_str(kHostileFile)}, {"line", py_int(7)}, {"name", py_str(kHostileName)}})});
}

std::string trace_entry(const char* action, std::uint64_t addr, std::uint64_t size) {
  return py_dict({{"action", py_str(action)}, {"addr", py_uint(addr)}, {"size", py_uint(size)},
                  {"stream", py_int(0)}, {"frames", frames()}});
}

std::string oom_entry(std::uint64_t size) {
  return py_dict({{"action", py_str("oom")}, {"size", py_uint(size)}, {"stream", py_int(0)},
                  {"device_free", py_int(0)}, {"frames", frames()}});
}

std::string snapshot(const std::vector<std::string>& entries) {
  return pickled(py_dict({{"segments", py_list({})}, {"device_traces", py_list({py_list(entries)})}}));
}

std::string written(const TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir.path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string fixture(const std::string& name) {
  return std::string(OOMLAB_SOURCE_DIR) + "/harness/replay/tests/fixtures/" + name;
}

bool has_control_bytes(const std::string& text) {
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n') || byte == 0x7f) return true;
  }
  return false;
}

TEST(ReplayHostileCli, ControlBytesInFramesReachTheTerminalEscaped) {
  TempDir dir;
  const std::string path = written(dir, "frames.pickle",
                                   snapshot({trace_entry("segment_alloc", kBase, 2 << 20),
                                             trace_entry("alloc", kBase, 1 << 20), oom_entry(64 << 20)}));
  const Result result = run_oomlab({"replay", path});
  EXPECT_NE(result.exit_code, 2) << result.err;
  EXPECT_TRUE(has(result.out, "live at the peak")) << result.out;
  EXPECT_TRUE(has(result.out, "out of memory")) << result.out;
  EXPECT_FALSE(has_control_bytes(result.out)) << result.out;
  EXPECT_TRUE(has(result.out, "evil\\x1b]0;pwned\\x07\\x0d\\x0aforged.py\\x00tail:7 step\\x1b[2J\\x7f")) << result.out;
  // JSON escapes them itself; the document must parse and keep the text.
  const Result json = run_oomlab({"replay", path, "--json"});
  EXPECT_NE(json.exit_code, 2) << json.err;
  const nlohmann::json parsed = nlohmann::json::parse(json.out);
  EXPECT_TRUE(has(parsed["oom"]["frames"][0].get<std::string>(), kHostileFile));
}

TEST(ReplayHostileCli, APathThatIsNotUtf8StillGivesJsonAndARecord) {
  TempDir dir;
  const std::string path = written(dir, "snap\xff\xfe.pickle", read_text_file(fixture("training_protocol4.pickle")));
  const Result json = run_oomlab({"replay", path, "--json", "--out", dir.path("record.json")});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_TRUE(has(nlohmann::json::parse(json.out)["snapshot"].get<std::string>(), "snap\xef\xbf\xbd"));
  EXPECT_NO_THROW(nlohmann::json::parse(read_text_file(dir.path("record.json"))));
  const Result text = run_oomlab({"replay", path});
  EXPECT_EQ(text.exit_code, 0) << text.err;
}

TEST(ReplayHostileCli, ImpossibleTracesAreBadInput) {
  TempDir dir;
  expect_usage_error({"replay", written(dir, "inside.pickle",
                                        snapshot({trace_entry("segment_alloc", kBase, 2 << 20),
                                                  trace_entry("alloc", kBase, 1 << 20),
                                                  trace_entry("alloc", kBase + 4096, 512)}))},
                     "device_traces[0][2]: alloc of 512 bytes at 0x7f0000001000 overlaps");
  expect_usage_error({"replay", written(dir, "huge.pickle",
                                        snapshot({trace_entry("segment_alloc", 0, UINT64_MAX),
                                                  trace_entry("alloc", 0, 512)}))},
                     "device_traces[0][0]: 'segment_alloc' of 18446744073709551615 bytes is more than any GPU holds");
  expect_usage_error({"replay", written(dir, "wraps.pickle",
                                        snapshot({trace_entry("segment_alloc", UINT64_MAX - 4095, 2 << 20),
                                                  trace_entry("alloc", UINT64_MAX - 4095, 512)}))},
                     "ends past the end of the address space");
}

TEST(ReplayHostileCli, ADeviceMustBeAnIndexTheSnapshotTraced) {
  // "" and -1 were read as the default (main.cpp checks the text); -2 also by analyse_snapshot.
  for (const char* device : {"", "-1", "-2"}) {
    expect_usage_error({"replay", fixture("training_protocol4.pickle"), "--device", device}, "not a device index");
  }
  expect_usage_error({"replay", fixture("training_protocol4.pickle"), "--device", "3"},
                     "--device 3: the snapshot has no trace for it");
}

// Limits this process's private writable memory (RLIMIT_DATA: the heap and anonymous mappings;
// run_oomlab's child inherits it) and restores it. Not the address space: a CUDA build maps
// cuBLASLt's hundreds of MB of code at start-up, which a 512 MiB RLIMIT_AS refuses (exit 127).
class DataLimit {
 public:
  explicit DataLimit(rlim_t bytes) {
    getrlimit(RLIMIT_DATA, &saved_);
    const rlimit limit{bytes, saved_.rlim_max};
    applied_ = setrlimit(RLIMIT_DATA, &limit) == 0;
  }
  ~DataLimit() { setrlimit(RLIMIT_DATA, &saved_); }
  bool applied() const { return applied_; }

 private:
  rlimit saved_{};
  bool applied_ = false;
};

TEST(ReplayHostileCli, ASnapshotTooLargeForMemoryIsOneLineAndExitTwo) {
  TempDir dir;
  // 48M Nones: a 48 MB file whose decoded values take 16 bytes each, 768 MB (within the
  // reader's 4 GiB limit), with the data segment capped at 512 MiB.
  const std::string path = written(dir, "big.pickle", pickled("](" + std::string(48u << 20, 'N') + "e"));
  Result result;
  {
    DataLimit limit(rlim_t{512} << 20);
    if (!limit.applied()) GTEST_SKIP() << "cannot limit the data segment here";
    result = run_oomlab({"replay", path});
  }
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_TRUE(has(result.err, "oomlab: error: ")) << result.err;
  EXPECT_TRUE(has(result.err, "big.pickle': replaying it needs more memory than this machine has")) << result.err;
  EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
}

}  // namespace
}  // namespace oomlab::cli_test
