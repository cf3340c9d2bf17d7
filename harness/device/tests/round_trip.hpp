// One check of a device's copies and memset, for every backend with real bytes (host here, cuda
// on a GPU): each copy kind once, then a memset read back.
#pragma once
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/testing/random_bytes.hpp"

namespace oomlab::testing {

// n random bytes host -> a -> b -> host come back unchanged; b memset to 0x5A reads back so.
inline void check_round_trip(Device& device, std::size_t n) {
  auto input = random_bytes(n, 11);
  void* a = device.allocator().allocate(n);
  void* b = device.allocator().allocate(n);
  device.copy(a, input.data(), n, CopyKind::host_to_device);
  device.copy(b, a, n, CopyKind::device_to_device);
  std::vector<std::uint8_t> output(n, 0);
  device.copy(output.data(), b, n, CopyKind::device_to_host);
  EXPECT_EQ(output, input);
  device.memset(b, 0x5A, n);
  device.copy(output.data(), b, n, CopyKind::device_to_host);
  EXPECT_EQ(output, std::vector<std::uint8_t>(n, 0x5A));
  device.allocator().deallocate(a);
  device.allocator().deallocate(b);
}

}  // namespace oomlab::testing
