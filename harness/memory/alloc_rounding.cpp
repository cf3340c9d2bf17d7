#include "harness/memory/alloc_rounding.hpp"

#include <algorithm>

namespace oomlab::memory {
namespace {

constexpr std::size_t kRoundupFirstLog2 = 20;  // the first interval starts at 1 MiB

}  // namespace

std::size_t roundup_power2_next_division(std::size_t size, std::size_t divisions) {
  if (is_power_of_two(size)) return size;
  const std::size_t power2_floor = std::size_t{1} << log2_floor(size);
  const std::size_t step = power2_floor >> log2_floor(divisions);
  if (step == 0) return power2_floor << 1;
  const std::size_t floor = size & ~(step - 1);
  return floor == size ? size : floor + step;
}

std::size_t roundup_divisions_for(const RoundupTable& table, std::size_t size) {
  const std::size_t log = log2_floor(size);
  const std::size_t index = log > kRoundupFirstLog2 ? log - kRoundupFirstLog2 : 0;
  return table[std::min(index, kRoundupIntervals - 1)];
}

std::size_t round_request(std::size_t size, const RoundupTable& table) {
  if (size < kMinBlockSize) return kMinBlockSize;
  const std::size_t divisions = roundup_divisions_for(table, size);
  if (divisions > 1 && size > kMinBlockSize * divisions) return roundup_power2_next_division(size, divisions);
  return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

std::size_t allocation_size(std::size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

}  // namespace oomlab::memory
