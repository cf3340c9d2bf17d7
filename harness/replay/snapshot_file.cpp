#include "harness/replay/snapshot_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/memory/user_text.hpp"
#include "harness/replay/snapshot_parse.hpp"

#if OOMLAB_REPLAY_WITH_ZLIB
#include <zlib.h>
#endif

namespace oomlab::replay {
namespace {

[[noreturn]] void fail(const std::string& name, const std::string& problem) {
  throw SnapshotError(quote_user_text(name, 120) + ": " + problem);
}

bool is_gzip(const std::uint8_t* data, std::size_t size) {
  return size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
}

#if OOMLAB_REPLAY_WITH_ZLIB
// Inflates into a buffer that grows by 1 MiB up to the cap, so a gzip bomb costs the cap.
std::vector<std::uint8_t> gunzip(const std::uint8_t* data, std::size_t size,
                                 const std::string& name, std::uint64_t max_bytes) {
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) fail(name, "cannot start gunzip");
  std::vector<std::uint8_t> out;
  std::size_t fed = 0;  // input handed to zlib so far (uInt counts at most 4 GiB at a time)
  for (;;) {
    if (stream.avail_in == 0 && fed < size) {
      const std::size_t chunk = std::min<std::size_t>(size - fed, std::size_t{1} << 30);
      stream.next_in = const_cast<Bytef*>(data + fed);
      stream.avail_in = static_cast<uInt>(chunk);
      fed += chunk;
    }
    if (out.size() >= max_bytes) {
      inflateEnd(&stream);
      fail(name, "decompresses to more than " + format_size(max_bytes) + " (the reader's limit)");
    }
    const std::size_t before = out.size();
    const std::size_t grow = std::min<std::uint64_t>(std::uint64_t{1} << 20, max_bytes - before);
    out.resize(before + grow);
    stream.next_out = out.data() + before;
    stream.avail_out = static_cast<uInt>(grow);
    const int status = inflate(&stream, Z_NO_FLUSH);
    out.resize(before + grow - stream.avail_out);
    if (status == Z_STREAM_END) break;
    const bool input_left = stream.avail_in != 0 || fed < size;
    if (status == Z_OK || (status == Z_BUF_ERROR && input_left)) continue;
    inflateEnd(&stream);
    fail(name, "is a damaged or truncated gzip file");
  }
  const bool trailing = stream.avail_in != 0 || fed != size;
  inflateEnd(&stream);
  if (trailing) fail(name, "has data after its gzip stream (several files concatenated?)");
  return out;
}
#endif

}  // namespace

bool snapshot_gzip_supported() { return OOMLAB_REPLAY_WITH_ZLIB != 0; }

Snapshot read_snapshot(const std::uint8_t* data, std::size_t size, const std::string& name,
                       const SnapshotReadLimits& limits) {
  std::vector<std::uint8_t> unzipped;
  if (is_gzip(data, size)) {
#if OOMLAB_REPLAY_WITH_ZLIB
    unzipped = gunzip(data, size, name, limits.max_pickle_bytes);
    data = unzipped.data();
    size = unzipped.size();
#else
    fail(name, "is gzip-compressed and this build has no zlib: gunzip it first");
#endif
  } else if (size > limits.max_pickle_bytes) {
    fail(name, "holds " + format_size(size) + ", more than the reader's limit of " +
                   format_size(limits.max_pickle_bytes));
  }
  try {
    return parse_snapshot(decode_pickle(data, size, limits.pickle));
  } catch (const PickleError& error) {
    fail(name, error.what());
  } catch (const SnapshotError& error) {
    fail(name, error.what());
  }
}

Snapshot load_snapshot(const std::string& path, const SnapshotReadLimits& limits) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error) fail(path, "cannot be opened: " + error.message());
  if (!std::filesystem::is_regular_file(status)) {
    fail(path, "is not a regular file (a directory, FIFO or device), not a snapshot");
  }
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) fail(path, std::string("cannot be opened: ") + std::strerror(errno));
  const std::streamoff length = file.tellg();
  if (length < 0) fail(path, "cannot be read");
  if (static_cast<std::uint64_t>(length) > limits.max_file_bytes) {
    fail(path, "holds " + format_size(static_cast<std::size_t>(length)) +
                   ", more than the reader's limit of " + format_size(limits.max_file_bytes));
  }
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(length));
  file.seekg(0);
  if (!file.read(reinterpret_cast<char*>(bytes.data()), length)) {
    fail(path, std::string("could not be read: ") + std::strerror(errno));
  }
  return read_snapshot(bytes.data(), bytes.size(), path, limits);
}

}  // namespace oomlab::replay
