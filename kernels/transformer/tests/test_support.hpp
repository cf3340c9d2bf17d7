// Shared setup for the transformer op tests: host and dry devices, and the tolerance for
// finite-difference gradients (central differences in f32 with a step of 1e-3).
#pragma once
#include "kernels/core/tensor.hpp"
#include "kernels/testing/compare.hpp"

namespace oomlab::testing {

inline constexpr Tolerance kFiniteDifferenceTolerance{2e-3, 1e-2};

inline Device& host_device() {
  static Device device(DeviceKind::host, memory::AllocatorConfig{});
  return device;
}
inline Device& dry_device() {
  static Device device(DeviceKind::dry, memory::AllocatorConfig{});
  return device;
}

}  // namespace oomlab::testing
