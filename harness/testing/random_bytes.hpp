// Seeded random bytes for tests of copies and files: a round trip that drops or reorders bytes
// cannot pass by accident.
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace oomlab::testing {

inline std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::uint8_t> bytes(n);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(byte(rng));
  return bytes;
}

}  // namespace oomlab::testing
