// Byte counts and addresses from a trace, checked in one place. A snapshot is data from outside:
// a hand-made one can hold a 2^64-1-byte segment or a block whose end passes 2^64, and unchecked
// sums of those wrap ("PyTorch's 1B"). Every size a trace says PyTorch held is at most
// kMostDeviceBytes, so sums of a few of them stay far inside 64 bits.
#pragma once
#include <cstdint>
#include <optional>

namespace oomlab::replay {

// More memory than any GPU has or will soon have (1 PiB; the largest hold a few hundred GB): a
// segment, a block or a device's reserved total beyond it is not from a real run.
constexpr std::uint64_t kMostDeviceBytes = std::uint64_t{1} << 50;

// addr + size, or nullopt where the range would pass the end of the address space.
constexpr std::optional<std::uint64_t> checked_end(std::uint64_t addr, std::uint64_t size) {
  if (size > UINT64_MAX - addr) return std::nullopt;
  return addr + size;
}

}  // namespace oomlab::replay
