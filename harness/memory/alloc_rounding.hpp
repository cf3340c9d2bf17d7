// The caching allocator's size rules, PyTorch's (c10/cuda/CUDACachingAllocator.cpp): how a request
// is rounded and how large a segment is made for it. Pure functions, each with its own test.
#pragma once
#include <cstddef>

#include "harness/memory/alloc_config.hpp"

namespace oomlab::memory {

constexpr std::size_t kMinBlockSize = 512;          // every request rounds up to a multiple of this
constexpr std::size_t kSmallSize = std::size_t{1} << 20;        // largest request of the small pool
constexpr std::size_t kSmallBuffer = std::size_t{2} << 20;      // small pool segment (and expandable page)
constexpr std::size_t kLargeBuffer = std::size_t{20} << 20;     // segment for requests < kMinLargeAlloc
constexpr std::size_t kMinLargeAlloc = std::size_t{10} << 20;
constexpr std::size_t kRoundLarge = std::size_t{2} << 20;       // larger segments round up to this

constexpr bool is_power_of_two(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }
constexpr std::size_t log2_floor(std::size_t n) {  // n > 0
  std::size_t log = 0;
  while (n >>= 1) ++log;
  return log;
}

// roundup_power2_next_division: `size` up to the next 1/divisions step of its power of two
// (1200 with 4 divisions: the steps from 1024 are 256 apart, so 1280). Powers of two stay.
std::size_t roundup_power2_next_division(std::size_t size, std::size_t divisions);

// The divisions that apply to `size`: the entry of its power-of-two interval, counted from
// 1 MiB (smaller sizes take the first entry, sizes from 32 GiB the last).
std::size_t roundup_divisions_for(const RoundupTable& table, std::size_t size);

// round_size: < 512 B -> 512 B; else the next power-of-two division where the interval has more
// than one and the size exceeds 512 B x divisions, else a multiple of 512 B.
std::size_t round_request(std::size_t size, const RoundupTable& table);

// get_allocation_size: the segment a rounded request gets when nothing cached fits: 2 MiB for
// the small pool (<= 1 MiB), 20 MiB below 10 MiB, else the size rounded up to 2 MiB.
std::size_t allocation_size(std::size_t size);

}  // namespace oomlab::memory
