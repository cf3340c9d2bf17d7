// Reading the files compare and report are given, checked before a byte is read: only regular
// files (a character device such as /dev/zero never ends, a FIFO blocks), and no larger than a
// record or a trace can honestly be, so a hostile or mistaken path costs neither hours nor GBs.
#pragma once
#include <cstdint>
#include <string>

namespace oomlab::report {

// Run records, baselines, suite summaries and Google Benchmark files are kilobytes; 64 MiB is
// thousands of times that.
constexpr std::uint64_t kMaxResultFileBytes = std::uint64_t{64} << 20;
// A trace beside a record (or the report's own re-run): up to 16M events of ~150 bytes.
constexpr std::uint64_t kMaxTraceFileBytes = std::uint64_t{2} << 30;
// All the JSON files of one result set together (the whole of results/ is about 10 MB).
constexpr std::uint64_t kMaxResultSetBytes = std::uint64_t{512} << 20;

// The whole of `path`. Throws InputError naming it when it is not a regular file (after links),
// holds more than `max_bytes` ("over the 64 MiB a `what` may hold") or cannot be read.
std::string read_input_file(const std::string& path, std::uint64_t max_bytes, const std::string& what);

// The size of the regular file at `path` (links followed); throws InputError like read_input_file.
std::uint64_t input_file_size(const std::string& path, std::uint64_t max_bytes, const std::string& what);

}  // namespace oomlab::report
