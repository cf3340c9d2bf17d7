// DeviceMonitor on the GPU: a segment mapped and released between two timer samples still sets
// the peak, which is never below the allocator's peak reserved (the fixed-max-split run
// read 2.4 GiB below it when only the 10 ms timer sampled).
#include <gtest/gtest.h>

#include <chrono>

#include "harness/device/device.hpp"
#include "harness/device/monitor.hpp"
#include "harness/memory/size.hpp"
#include "harness/testing/require_gpu.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
using namespace std::chrono_literals;

TEST(DeviceMonitorGpu, PeakIsAtLeastThePeakReservedWithoutTheTimer) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, {});
  DeviceMonitor monitor(device, 1h);  // the timer never fires: only allocator events sample
  void* big = device.allocator().allocate(2_GiB);
  device.allocator().deallocate(big);
  device.allocator().empty_cache();  // gone before any timer sample
  monitor.stop();
  const auto peak_reserved = static_cast<std::size_t>(device.allocator().stats().reserved.peak);
  EXPECT_GE(monitor.peak_used(), peak_reserved) << monitor.describe();
  EXPECT_GE(monitor.event_samples(), 2u);  // the map and the unmap
  EXPECT_TRUE(monitor.error().empty()) << monitor.error();
}

}  // namespace
}  // namespace oomlab
