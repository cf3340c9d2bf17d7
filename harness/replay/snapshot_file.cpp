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

// The first bytes must start a pickle (PROTO, protocol 2 to 5): checked before the rest is read.
void check_pickle_start(const std::uint8_t* data, std::size_t size, const std::string& name,
                        const char* context) {
  try {
    pickle_protocol_of(data, size);
  } catch (const PickleError& error) {
    fail(name, context + std::string(error.what()));
  }
}

#if OOMLAB_REPLAY_WITH_ZLIB
struct Inflater {  // zlib's stream, ended on every path out
  z_stream stream{};
  Inflater() = default;
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  ~Inflater() { inflateEnd(&stream); }
};

// Inflates into a buffer that grows up to max_bytes and never past it (capacity is reserved by
// hand: a vector's doubling would reach twice the cap), so a gzip bomb costs the cap at most;
// the first bytes out must start a pickle, so zeros stop at the first megabyte.
std::vector<std::uint8_t> gunzip(const std::uint8_t* data, std::size_t size,
                                 const std::string& name, std::uint64_t max_bytes) {
  Inflater inflater;
  z_stream& stream = inflater.stream;
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) fail(name, "cannot start gunzip");
  std::vector<std::uint8_t> out;
  std::size_t fed = 0;  // input handed to zlib so far (uInt counts at most 4 GiB at a time)
  bool start_checked = false;
  for (;;) {
    if (stream.avail_in == 0 && fed < size) {
      const std::size_t chunk = std::min<std::size_t>(size - fed, std::size_t{1} << 30);
      stream.next_in = const_cast<Bytef*>(data + fed);
      stream.avail_in = static_cast<uInt>(chunk);
      fed += chunk;
    }
    if (out.size() >= max_bytes) {
      fail(name, "decompresses to more than " + format_size(max_bytes) + " (the reader's memory limit)");
    }
    const std::size_t before = out.size();
    const std::size_t grow = std::min<std::uint64_t>(std::uint64_t{1} << 20, max_bytes - before);
    if (before + grow > out.capacity()) {
      out.reserve(std::min<std::uint64_t>(std::max(2 * out.capacity(), before + grow), max_bytes));
    }
    out.resize(before + grow);
    stream.next_out = out.data() + before;
    stream.avail_out = static_cast<uInt>(grow);
    const int status = inflate(&stream, Z_NO_FLUSH);
    out.resize(before + grow - stream.avail_out);
    if (!start_checked && (out.size() >= 2 || status == Z_STREAM_END)) {
      check_pickle_start(out.data(), out.size(), name, "gunzipped, ");
      start_checked = true;
    }
    if (status == Z_STREAM_END) break;
    const bool input_left = stream.avail_in != 0 || fed < size;
    if (status == Z_OK || (status == Z_BUF_ERROR && input_left)) continue;
    fail(name, "is a damaged or truncated gzip file");
  }
  if (stream.avail_in != 0 || fed != size) {
    fail(name, "has data after its gzip stream (several files concatenated?)");
  }
  return out;
}
#endif

// The file's bytes, or `size` more, against the one memory limit.
void charge(std::uint64_t& used, std::uint64_t size, const std::string& name, std::uint64_t limit) {
  if (size > limit - used) {
    fail(name, "holds " + format_size(static_cast<std::size_t>(size)) + ", more than the reader's memory limit of " +
                   format_size(static_cast<std::size_t>(limit)));
  }
  used += size;
}

}  // namespace

bool snapshot_gzip_supported() { return OOMLAB_REPLAY_WITH_ZLIB != 0; }

Snapshot read_snapshot(const std::uint8_t* data, std::size_t size, const std::string& name,
                       const SnapshotReadLimits& limits) {
  const std::uint64_t limit = limits.max_memory_bytes;
  std::uint64_t used = 0;
  charge(used, size, name, limit);
  std::vector<std::uint8_t> unzipped;
  if (is_gzip(data, size)) {
#if OOMLAB_REPLAY_WITH_ZLIB
    unzipped = gunzip(data, size, name, limit - used);
    used += unzipped.size();
    data = unzipped.data();
    size = unzipped.size();
#else
    fail(name, "is gzip-compressed and this build has no zlib: gunzip it first");
#endif
  }
  PickleLimits pickle = limits.pickle;
  pickle.bytes_already_used = static_cast<std::size_t>(used);
  const std::uint64_t left = limit - used;
  pickle.max_decoded_bytes =
      static_cast<std::size_t>(used + std::min<std::uint64_t>(left, limits.pickle.max_decoded_bytes));
  try {
    return parse_snapshot(decode_pickle(data, size, pickle));
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
  std::uint64_t used = 0;
  charge(used, static_cast<std::uint64_t>(length), path, limits.max_memory_bytes);
  // The magic first: a 2 GB file of zeros is refused after two bytes, not after reading it.
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::min<std::streamoff>(length, 2)));
  file.seekg(0);
  if (!file.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()))) {
    fail(path, std::string("could not be read: ") + std::strerror(errno));
  }
  if (!is_gzip(bytes.data(), bytes.size())) check_pickle_start(bytes.data(), bytes.size(), path, "");
  const std::size_t head = bytes.size();
  bytes.resize(static_cast<std::size_t>(length));
  if (!file.read(reinterpret_cast<char*>(bytes.data() + head), static_cast<std::streamsize>(bytes.size() - head))) {
    fail(path, std::string("could not be read: ") + std::strerror(errno));
  }
  return read_snapshot(bytes.data(), bytes.size(), path, limits);
}

}  // namespace oomlab::replay
