// Device on the backends this machine has: host (real bytes) and dry (no backing); cuda only
// for its error when no GPU is present.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/device/host_buffer.hpp"
#include "harness/device/tests/round_trip.hpp"
#include "harness/memory/size.hpp"
#include "harness/testing/random_bytes.hpp"

namespace oomlab {
namespace {

using testing::random_bytes;

using namespace oomlab::literals;

TEST(DeviceKind, NamesRoundTrip) {
  for (DeviceKind kind : {DeviceKind::cuda, DeviceKind::host, DeviceKind::dry}) {
    auto parsed = parse_device_kind(device_kind_name(kind));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, kind);
  }
}

TEST(DeviceKind, RejectsUnknownNames) {
  EXPECT_FALSE(parse_device_kind("gpu").has_value());
  EXPECT_FALSE(parse_device_kind("").has_value());
  EXPECT_FALSE(parse_device_kind("CUDA").has_value());
}

TEST(DeviceKind, DefaultFollowsAvailability) {
  EXPECT_EQ(default_device_kind(), cuda_available() ? DeviceKind::cuda : DeviceKind::host);
}

TEST(Device, CudaWithoutGpuThrowsOneClearLine) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present";
  try {
    Device device(DeviceKind::cuda, {});
    FAIL() << "Device(cuda) without a GPU must throw";
  } catch (const std::runtime_error& e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind("--device cuda: no usable CUDA device (", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(Device, HostCopiesRoundTripRandomBytes) {
  Device device(DeviceKind::host, {});
  EXPECT_EQ(device.source().name(), "host");
  EXPECT_EQ(device.stream(), 0u);
  testing::check_round_trip(device, 3_MiB + 123);
}

TEST(Device, HostMemsetFillsEveryByte) {
  Device device(DeviceKind::host, {});
  const std::size_t n = 4097;
  auto* p = static_cast<std::uint8_t*>(device.allocator().allocate(n));
  device.memset(p, 0xA5, n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], 0xA5) << "byte " << i;
  device.allocator().deallocate(p);
}

TEST(Device, DryCopiesAndMemsetsAreNoOps) {
  Device device(DeviceKind::dry, {});
  EXPECT_FALSE(device.source().has_backing());
  auto input = random_bytes(1024, 3);
  std::vector<std::uint8_t> output(1024, 0x11);
  void* p = device.allocator().allocate(1024);
  // Dry addresses are never dereferenced: these must return without touching memory.
  device.copy(p, input.data(), 1024, CopyKind::host_to_device);
  device.memset(p, 0, 1024);
  device.copy(output.data(), p, 1024, CopyKind::device_to_host);
  EXPECT_EQ(output, std::vector<std::uint8_t>(1024, 0x11));
  device.allocator().deallocate(p);
  EXPECT_EQ(device.create_stream(), 0u);
}

TEST(Device, ExpandableSegmentsOnHostUseTheHostSource) {
  memory::AllocatorConfig config;
  config.expandable_segments = true;
  Device device(DeviceKind::host, config);
  EXPECT_EQ(device.source().name(), "host");
  EXPECT_TRUE(device.allocator().config().expandable_segments);
}

TEST(Device, BudgetReachesTheAllocator) {
  memory::AllocatorConfig config;
  config.budget = 64_MiB;
  Device device(DeviceKind::dry, config);
  EXPECT_EQ(device.allocator().config().budget, 64_MiB);
}

TEST(DeviceInfo, HostReportsCpuAndRam) {
  DeviceInfo info = query_device_info(DeviceKind::host);
  EXPECT_EQ(info.kind, "host");
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.total_memory, 64_MiB);
  EXPECT_EQ(info.driver_version, 0);
}

TEST(DeviceInfo, DryHasNoBacking) {
  DeviceInfo info = query_device_info(DeviceKind::dry);
  EXPECT_EQ(info.kind, "dry");
  EXPECT_EQ(info.name, "dry (no backing)");
  EXPECT_EQ(info.total_memory, 0u);
}

TEST(DeviceInfo, CudaWithoutGpuThrows) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present";
  EXPECT_THROW(query_device_info(DeviceKind::cuda), std::runtime_error);
}

TEST(HostBuffer, HostIsPlainMemoryDryHasNoneAndMovesTransferOwnership) {
  HostBuffer zeroed(DeviceKind::host, 4096, /*zero_filled=*/true);
  ASSERT_NE(zeroed.data(), nullptr);
  EXPECT_FALSE(zeroed.pinned());
  const auto* bytes = static_cast<const std::uint8_t*>(zeroed.data());
  for (std::size_t i = 0; i < zeroed.bytes(); ++i) ASSERT_EQ(bytes[i], 0) << i;
  HostBuffer dry(DeviceKind::dry, 4096);
  EXPECT_EQ(dry.data(), nullptr);
  EXPECT_EQ(dry.bytes(), 4096u);
  void* owned = zeroed.data();
  HostBuffer moved(std::move(zeroed));
  EXPECT_EQ(moved.data(), owned);
  EXPECT_EQ(zeroed.data(), nullptr);
  HostBuffer assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.data(), owned);
}

}  // namespace
}  // namespace oomlab
