// Seeded integers uniform in [0, bound) as floats, for Tensor::from_host: token ids and class
// targets. The training scenarios' token stream and the kernel tests draw them the same way.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

namespace oomlab {

inline std::vector<float> random_indices(std::size_t n, std::int64_t bound, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int64_t> dist(0, bound - 1);
  std::vector<float> values(n);
  for (float& v : values) v = static_cast<float>(dist(rng));
  return values;
}

}  // namespace oomlab
