// Counter-based normal numbers for parameter initialisation: element i of a tensor filled with
// seed s is a function of (s, i) alone, so the CPU reference and the CUDA kernel write the same
// values (up to the last ulp of their logf/cosf) and a 7B model initialises on the GPU in
// milliseconds instead of the minutes a sequential host generator takes for 6.7e9 draws.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/core/host_device.hpp"

namespace oomlab::ops {

// SplitMix64's output function: a bijection of 64-bit words with full avalanche.
OOMLAB_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A standard normal draw for (seed, index) by Box-Muller on two 24-bit uniforms of one hash.
OOMLAB_HOST_DEVICE inline float normal_at(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t bits = mix64(mix64(seed) + index * 0x9E3779B97F4A7C15ull);
  const float u1 = static_cast<float>((bits >> 40) + 1) * (1.0f / 16777216.0f);  // (0, 1]: log finite
  const float u2 = static_cast<float>(bits & 0xFFFFFFu) * (1.0f / 16777216.0f);   // [0, 1)
  return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

}  // namespace oomlab::ops
