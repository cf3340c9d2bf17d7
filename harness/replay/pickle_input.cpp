#include "harness/replay/pickle_input.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace oomlab::replay {
namespace {
// Read this much at a time: large enough that the reads cost nothing beside the decoding.
constexpr std::size_t kChunk = std::size_t{1} << 20;
}  // namespace

PickleInput::PickleInput(const std::uint8_t* data, std::size_t size)
    : data_(data), end_(size), total_(size), ended_(true) {}

PickleInput::PickleInput(Reader reader, std::optional<std::uint64_t> total)
    : data_(nullptr), total_(total), reader_(std::move(reader)) {}

bool PickleInput::fill(std::size_t n) {
  if (ended_) return false;
  // Keep the bytes not yet taken at the front; grow only for a value longer than a chunk (the
  // decoder checks a length against its limits before it asks for that many bytes).
  const std::size_t kept = end_ - begin_;
  const std::size_t want = std::max(kChunk, n);
  if (buffer_.size() < want) {
    std::vector<std::uint8_t> bigger(want);
    if (kept != 0) std::memcpy(bigger.data(), data_ + begin_, kept);
    buffer_.swap(bigger);
  } else if (kept != 0 && begin_ != 0) {
    std::memmove(buffer_.data(), data_ + begin_, kept);
  }
  base_ += begin_;
  begin_ = 0;
  end_ = kept;
  data_ = buffer_.data();
  while (end_ < n) {
    const std::size_t got = reader_(buffer_.data() + end_, buffer_.size() - end_);
    if (got == 0) {
      ended_ = true;
      return false;
    }
    end_ += got;
  }
  return true;
}

}  // namespace oomlab::replay
