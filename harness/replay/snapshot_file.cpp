#include "harness/replay/snapshot_file.hpp"

#include <algorithm>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>
#include <utility>
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

// A failure of the stream under the decoder (a damaged gzip, a read error): it already names
// the file, so it passes the decoder's messages by.
class StreamError : public SnapshotError {
 public:
  using SnapshotError::SnapshotError;
};

[[noreturn]] void fail_stream(const std::string& name, const std::string& problem) {
  throw StreamError(quote_user_text(name, 120) + ": " + problem);
}

constexpr std::size_t kReadChunk = std::size_t{1} << 20;

// The decoded tree (millions of small nodes and memo slots) is gone once the snapshot is made;
// glibc keeps such memory for reuse unless told, and the replay's events are one large block
// that cannot reuse it, so a big snapshot would hold both.
void give_back_freed_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

// The compressed bytes: a file read in chunks, or a buffer.
class CompressedInput {
 public:
  CompressedInput(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  CompressedInput(std::ifstream& file, const std::string& name) : file_(&file), name_(name) {}

  // The next bytes, empty at the end.
  std::pair<const std::uint8_t*, std::size_t> next() {
    if (file_ == nullptr) {
      const std::size_t chunk = std::min(size_ - fed_, std::size_t{1} << 30);
      const std::uint8_t* bytes = data_ + fed_;
      fed_ += chunk;
      return {bytes, chunk};
    }
    buffer_.resize(kReadChunk);
    file_->read(reinterpret_cast<char*>(buffer_.data()), static_cast<std::streamsize>(buffer_.size()));
    if (file_->bad()) fail_stream(name_, std::string("could not be read: ") + std::strerror(errno));
    return {buffer_.data(), static_cast<std::size_t>(file_->gcount())};
  }

 private:
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t fed_ = 0;
  std::ifstream* file_ = nullptr;
  std::string name_;
  std::vector<std::uint8_t> buffer_;
};

#if OOMLAB_REPLAY_WITH_ZLIB
// Inflates as the decoder asks for bytes: only zlib's window and a chunk of input are held, so a
// gzip bomb costs nothing until its bytes are decoded (and its first ones must start a pickle).
class Gunzip {
 public:
  Gunzip(CompressedInput input, std::string name) : input_(std::move(input)), name_(std::move(name)) {
    if (inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK) fail_stream(name_, "cannot start gunzip");
  }
  Gunzip(const Gunzip&) = delete;
  Gunzip& operator=(const Gunzip&) = delete;
  ~Gunzip() { inflateEnd(&stream_); }

  std::size_t read(std::uint8_t* out, std::size_t size) {
    if (ended_ || size == 0) return 0;
    stream_.next_out = out;
    stream_.avail_out = static_cast<uInt>(std::min<std::size_t>(size, std::size_t{1} << 30));
    const uInt asked = stream_.avail_out;
    while (stream_.avail_out == asked) {
      if (stream_.avail_in == 0 && !input_ended_) {
        const auto [bytes, count] = input_.next();
        stream_.next_in = const_cast<Bytef*>(bytes);
        stream_.avail_in = static_cast<uInt>(count);
        input_ended_ = count == 0;
      }
      const int status = inflate(&stream_, Z_NO_FLUSH);
      if (status == Z_STREAM_END) {
        ended_ = true;
        const bool trailing = stream_.avail_in != 0 || (!input_ended_ && input_.next().second != 0);
        if (trailing) fail_stream(name_, "has data after its gzip stream (several files concatenated?)");
        break;
      }
      if (status == Z_OK || (status == Z_BUF_ERROR && !input_ended_)) continue;
      fail_stream(name_, "is a damaged or truncated gzip file");
    }
    return asked - stream_.avail_out;
  }

 private:
  CompressedInput input_;
  std::string name_;
  z_stream stream_{};
  bool input_ended_ = false;
  bool ended_ = false;
};
#endif

Snapshot decode_checked(PickleInput& input, const std::string& name, const SnapshotReadLimits& limits) {
  PickleLimits pickle = limits.pickle;
  pickle.max_decoded_bytes = static_cast<std::size_t>(limits.max_memory_bytes);  // the one limit
  try {
    Snapshot snapshot = decode_snapshot(input, pickle);
    give_back_freed_memory();
    return snapshot;
  } catch (const StreamError&) {
    throw;
  } catch (const PickleError& error) {
    fail(name, error.what());
  } catch (const SnapshotError& error) {
    fail(name, error.what());
  }
}

Snapshot read_gzip(CompressedInput compressed, const std::string& name, const SnapshotReadLimits& limits) {
#if OOMLAB_REPLAY_WITH_ZLIB
  Gunzip gunzip(std::move(compressed), name);
  PickleInput input([&](std::uint8_t* out, std::size_t size) { return gunzip.read(out, size); },
                    std::nullopt);
  // The first bytes it inflates must start a pickle: a bomb of zeros stops here.
  const std::uint8_t* head = input.peek(2);
  check_pickle_start(head != nullptr ? head : input.peek(input.buffered()),
                     head != nullptr ? 2 : input.buffered(), name, "gunzipped, ");
  return decode_checked(input, name, limits);
#else
  (void)compressed;
  (void)limits;
  fail(name, "is gzip-compressed and this build has no zlib: gunzip it first");
#endif
}

}  // namespace

bool snapshot_gzip_supported() { return OOMLAB_REPLAY_WITH_ZLIB != 0; }

Snapshot read_snapshot(const std::uint8_t* data, std::size_t size, const std::string& name,
                       const SnapshotReadLimits& limits) {
  if (is_gzip(data, size)) return read_gzip(CompressedInput(data, size), name, limits);
  PickleInput input(data, size);
  return decode_checked(input, name, limits);
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
  // The magic first: a 2 GB file of zeros is refused after two bytes, not after reading it.
  std::uint8_t head[2] = {0, 0};
  const std::size_t head_size = static_cast<std::size_t>(std::min<std::streamoff>(length, 2));
  file.seekg(0);
  if (!file.read(reinterpret_cast<char*>(head), static_cast<std::streamsize>(head_size))) {
    fail(path, std::string("could not be read: ") + std::strerror(errno));
  }
  file.seekg(0);
  if (is_gzip(head, head_size)) return read_gzip(CompressedInput(file, path), path, limits);
  check_pickle_start(head, head_size, path, "");
  PickleInput input(
      [&](std::uint8_t* out, std::size_t size) {
        file.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(size));
        if (file.bad()) fail_stream(path, std::string("could not be read: ") + std::strerror(errno));
        return static_cast<std::size_t>(file.gcount());
      },
      static_cast<std::uint64_t>(length));
  return decode_checked(input, path, limits);
}

}  // namespace oomlab::replay
