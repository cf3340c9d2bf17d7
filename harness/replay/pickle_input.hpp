// The bytes the pickle decoder reads: a buffer already in memory, or a stream (a file read in
// chunks, a gzip inflated in chunks) of which only a window is held, so a 2 GB snapshot never
// sits in memory whole. take(n) hands out the next n bytes, valid until the next take.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace oomlab::replay {

class PickleInput {
 public:
  // Fills `out` with up to `size` bytes; returns how many, 0 at the end. Throws on read errors.
  using Reader = std::function<std::size_t(std::uint8_t* out, std::size_t size)>;

  // Bytes in memory, not copied.
  PickleInput(const std::uint8_t* data, std::size_t size);
  // A stream; `total` when its length is known (a plain file), nullopt for a gzip's inflation.
  PickleInput(Reader reader, std::optional<std::uint64_t> total);

  // Bytes read so far: the offset of the next byte in the whole pickle.
  std::uint64_t position() const { return base_ + begin_; }
  // Bytes after the position, when the length is known.
  std::optional<std::uint64_t> known_left() const {
    if (!total_) return std::nullopt;
    return *total_ - position();
  }

  // The next n bytes, advancing past them; nullptr when the input ends first (left() then says
  // how many there were).
  const std::uint8_t* take(std::size_t n) {
    if (end_ - begin_ < n && !fill(n)) return nullptr;
    const std::uint8_t* bytes = data_ + begin_;
    begin_ += n;
    return bytes;
  }
  // The next n bytes without advancing; nullptr when the input ends first.
  const std::uint8_t* peek(std::size_t n) {
    if (end_ - begin_ < n && !fill(n)) return nullptr;
    return data_ + begin_;
  }
  // Bytes buffered after the position (all that is left once take() has failed).
  std::size_t buffered() const { return end_ - begin_; }
  // Whether any byte follows the position.
  bool at_end() { return peek(1) == nullptr; }

 private:
  // Reads until n bytes follow the position or the stream ends; whether they do.
  bool fill(std::size_t n);

  const std::uint8_t* data_;
  std::size_t begin_ = 0;  // the position, in data_
  std::size_t end_ = 0;    // bytes in data_
  std::uint64_t base_ = 0;  // stream offset of data_[0]
  std::optional<std::uint64_t> total_;
  Reader reader_;  // empty for bytes in memory
  std::vector<std::uint8_t> buffer_;
  bool ended_ = false;
};

}  // namespace oomlab::replay
