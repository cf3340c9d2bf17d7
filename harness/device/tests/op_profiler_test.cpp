// OpProfiler on host (wall clock) and dry (zero time): ranges summed by name, nesting, reset, the
// active-profiler stack, and a range with no profiler doing nothing.
#include "harness/device/op_profiler.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

namespace oomlab {
namespace {

void busy_for(std::chrono::milliseconds duration) { std::this_thread::sleep_for(duration); }

TEST(OpProfiler, SumsRangesByNameLargestFirstIncludingNestedOnes) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  OpProfiler profiler(device);
  for (int i = 0; i < 3; ++i) {
    ProfileRange outer("step");
    {
      ProfileRange inner("slow");
      busy_for(std::chrono::milliseconds(4));
    }
    ProfileRange quick("quick");
  }
  const std::vector<OpProfiler::Total> totals = profiler.totals();
  ASSERT_EQ(totals.size(), 3u);
  EXPECT_EQ(totals[0].name, "step");  // includes its children
  EXPECT_EQ(totals[1].name, "slow");
  EXPECT_EQ(totals[2].name, "quick");
  for (const OpProfiler::Total& total : totals) EXPECT_EQ(total.calls, 3) << total.name;
  EXPECT_GE(totals[1].milliseconds, 12.0);
  EXPECT_GE(totals[0].milliseconds, totals[1].milliseconds);
}

TEST(OpProfiler, ResetForgetsTheWarmUp) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  OpProfiler profiler(device);
  { ProfileRange warm_up("warm-up"); }
  profiler.reset();
  { ProfileRange measured("measured"); }
  const auto totals = profiler.totals();
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].name, "measured");
}

TEST(OpProfiler, DryCountsCallsAtZeroTime) {
  Device device(DeviceKind::dry, memory::AllocatorConfig{});
  OpProfiler profiler(device);
  { ProfileRange range("kernel"); }
  { ProfileRange range("kernel"); }
  const auto totals = profiler.totals();
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].calls, 2);
  EXPECT_EQ(totals[0].milliseconds, 0.0);
}

TEST(OpProfiler, ActiveProfilersNestAndRangesWithoutOneDoNothing) {
  EXPECT_EQ(OpProfiler::active(), nullptr);
  { ProfileRange ignored("nobody listens"); }
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  {
    OpProfiler outer(device);
    {
      OpProfiler inner(device);
      EXPECT_EQ(OpProfiler::active(), &inner);
      { ProfileRange range("inner only"); }
      EXPECT_EQ(inner.totals().size(), 1u);
    }
    EXPECT_EQ(OpProfiler::active(), &outer);
    EXPECT_TRUE(outer.totals().empty());
  }
  EXPECT_EQ(OpProfiler::active(), nullptr);
}

TEST(OpProfiler, EndWithoutBeginIsALogicError) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  OpProfiler profiler(device);
  EXPECT_THROW(profiler.end(), std::logic_error);
}

}  // namespace
}  // namespace oomlab
