// RunContext: steps are timed and marked in the trace, work and metrics are kept.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "harness/runner/run_context.hpp"

namespace oomlab {
namespace {

TEST(RunContext, TimesEachStepAndMarksTheTrace) {
  Device device(DeviceKind::dry, {});
  RunContext context(device, Scale::tiny, 3);
  EXPECT_EQ(context.current_step(), -1);
  for (int step = 0; step < 3; ++step) {
    context.begin_step(step);
    EXPECT_EQ(context.current_step(), step);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    context.end_step();
  }
  ASSERT_EQ(context.step_seconds().size(), 3u);
  for (double seconds : context.step_seconds()) {
    EXPECT_GE(seconds, 0.002);
    EXPECT_LT(seconds, 5.0);
  }
  int step_marks = 0;
  for (const auto& event : device.allocator().trace().events()) {
    if (event.kind == memory::EventKind::step) ++step_marks;
  }
  EXPECT_EQ(step_marks, 3);
}

TEST(RunContext, EndWithoutBeginIsAProgrammingError) {
  Device device(DeviceKind::dry, {});
  RunContext context(device, Scale::tiny, 1);
  EXPECT_THROW(context.end_step(), std::logic_error);
}

TEST(RunContext, WorkAddsUpInOneUnit) {
  Device device(DeviceKind::dry, {});
  RunContext context(device, Scale::small, 1);
  context.add_work(1.5, "GB/s");
  context.add_work(2.0, "GB/s");
  EXPECT_DOUBLE_EQ(context.work(), 3.5);
  EXPECT_EQ(context.work_unit(), "GB/s");
  EXPECT_THROW(context.add_work(1, "samples/s"), std::invalid_argument);
  context.set_metric("x", 1);
  context.set_metric("x", 2);
  EXPECT_EQ(context.metrics().at("x"), 2);
}

TEST(RunContext, ProgressHookRunsAfterEachStep) {
  Device device(DeviceKind::dry, {});
  RunContext context(device, Scale::tiny, 2);
  int calls = 0;
  context.set_progress([](void* user, const RunContext&) { ++*static_cast<int*>(user); }, &calls);
  context.begin_step(0);
  context.end_step();
  context.note("a note redraws the line");
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace oomlab
