// GPU-test support: the same random inputs on host and on cuda, so every CUDA kernel is
// compared with its CPU reference (run through the same dispatch on the host device).
#pragma once
#include <gtest/gtest.h>

#include "kernels/testing/compare.hpp"
#include "kernels/testing/random_fill.hpp"
#include "kernels/transformer/tests/test_support.hpp"

namespace oomlab::testing {

// Created on first use and never destroyed: freeing device memory from a static destructor can
// race the CUDA runtime's own teardown at exit.
inline Device& cuda_device() {
  static Device* device = new Device(DeviceKind::cuda, memory::AllocatorConfig{});
  return *device;
}

struct Pair {
  Tensor host;
  Tensor cuda;
};

inline Pair random_pair(const Shape& shape, DType dtype, std::uint32_t seed, float lo = -1.0f,
                        float hi = 1.0f) {
  std::vector<float> values = random_values(static_cast<std::size_t>(shape_numel(shape)), seed, lo, hi);
  return {Tensor::from_host(host_device(), shape, dtype, values),
          Tensor::from_host(cuda_device(), shape, dtype, values)};
}

inline Pair values_pair(const Shape& shape, DType dtype, const std::vector<float>& values) {
  return {Tensor::from_host(host_device(), shape, dtype, values),
          Tensor::from_host(cuda_device(), shape, dtype, values)};
}

// Outputs start as random garbage, so a kernel that skips elements cannot pass.
inline Pair output_pair(const Shape& shape, DType dtype, std::uint32_t seed = 999) {
  return random_pair(shape, dtype, seed, 50.0f, 60.0f);
}

inline Pair zeros_pair(const Shape& shape, DType dtype) {
  return {Tensor::zeros(host_device(), shape, dtype), Tensor::zeros(cuda_device(), shape, dtype)};
}

inline ::testing::AssertionResult pair_close(const Pair& pair, Tolerance tolerance,
                                             const std::string& what) {
  return all_close(pair.cuda.to_host_f32(), pair.host.to_host_f32(), tolerance, what);
}

}  // namespace oomlab::testing
