// DeviceMonitor on host and dry: it reports reserved + simulated context and keeps the peak.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "harness/device/device.hpp"
#include "harness/device/monitor.hpp"
#include "harness/memory/size.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
using namespace std::chrono_literals;

TEST(DeviceMonitor, ReportsReservedPlusContextOnDry) {
  Device device(DeviceKind::dry, {});
  DeviceMonitor monitor(device, 1ms, 300_MiB);
  EXPECT_EQ(monitor.method(), "allocator");
  EXPECT_EQ(monitor.peak_used(), 300_MiB);  // nothing reserved yet
  void* p = device.allocator().allocate(100_MiB);
  auto reserved = static_cast<std::size_t>(device.allocator().stats().reserved.current);
  ASSERT_GE(reserved, 100_MiB);
  device.allocator().deallocate(p);
  device.allocator().empty_cache();
  // The monitor thread must have seen the reserved bytes at least once: wait for new samples.
  auto samples_before = monitor.samples();
  while (monitor.samples() < samples_before + 3) std::this_thread::sleep_for(1ms);
  monitor.stop();
  EXPECT_EQ(monitor.last_used(), 300_MiB);  // back to the context after empty_cache
  EXPECT_TRUE(monitor.error().empty()) << monitor.error();
}

TEST(DeviceMonitor, KeepsThePeakSeenByTheThread) {
  Device device(DeviceKind::host, {});
  DeviceMonitor monitor(device, 1ms);
  void* p = device.allocator().allocate(40_MiB);
  auto reserved = static_cast<std::size_t>(device.allocator().stats().reserved.current);
  auto samples_before = monitor.samples();
  while (monitor.samples() < samples_before + 2) std::this_thread::sleep_for(1ms);
  device.allocator().deallocate(p);
  device.allocator().empty_cache();
  monitor.stop();
  EXPECT_EQ(monitor.peak_used(), reserved);
  EXPECT_EQ(monitor.last_used(), 0u);
}

TEST(DeviceMonitor, StopIsIdempotentAndDestructionStops) {
  Device device(DeviceKind::dry, {});
  {
    DeviceMonitor monitor(device, 5ms);
    monitor.stop();
    monitor.stop();
    EXPECT_GE(monitor.samples(), 2u);  // one at start, one at stop
  }
  DeviceMonitor monitor(device, 1h);  // destructor must not wait for the interval
}

}  // namespace
}  // namespace oomlab
