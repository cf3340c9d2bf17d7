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

// The timer never fires here (1 h): the peak is caught at the segment map itself, so a segment
// mapped and released between two timer samples still counts.
TEST(DeviceMonitor, CatchesThePeakAtSegmentEventsNotOnlyOnTheTimer) {
  for (DeviceKind kind : {DeviceKind::dry, DeviceKind::host}) {
    Device device(kind, {});
    DeviceMonitor monitor(device, 1h, 300_MiB);
    device.allocator().mark_step(0);
    void* small = device.allocator().allocate(1_MiB);
    void* big = device.allocator().allocate(700_MiB);
    device.allocator().deallocate(big);
    device.allocator().empty_cache();  // the peak is gone before any timer sample
    device.allocator().deallocate(small);
    monitor.stop();
    const auto peak_reserved = static_cast<std::size_t>(device.allocator().stats().reserved.peak);
    EXPECT_EQ(monitor.peak_used(), peak_reserved + 300_MiB) << device_kind_name(kind);
    EXPECT_GE(monitor.event_samples(), 4u);  // step, two maps, an unmap
    EXPECT_NE(monitor.describe().find("at every segment map/unmap, step and OOM, and every 3600000 ms"),
              std::string::npos) << monitor.describe();
  }
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
