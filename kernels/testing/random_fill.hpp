// Seeded random inputs for kernel tests: uniform in [lo, hi) and never exactly zero, so a kernel
// that writes nothing, or reads the wrong buffer, cannot pass by accident.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/core/random_indices.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::testing {

inline std::vector<float> random_values(std::size_t n, std::uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(n);
  for (float& v : values) {
    do v = dist(rng);
    while (v == 0.0f);
  }
  return values;
}

inline Tensor random_tensor(Device& device, Shape shape, DType dtype, std::uint32_t seed,
                            float lo = -1.0f, float hi = 1.0f) {
  std::size_t n = static_cast<std::size_t>(shape_numel(shape));
  return Tensor::from_host(device, std::move(shape), dtype, random_values(n, seed, lo, hi));
}

using oomlab::random_indices;  // kernels/core/random_indices.hpp

}  // namespace oomlab::testing
