// RunContext: steps are timed and marked in the trace, work and metrics are kept.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "harness/device/op_profiler.hpp"
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

// One step that sleeps `sleep` and adds `work` items inside it.
void timed_step(RunContext& context, int step, std::chrono::milliseconds sleep, double work) {
  context.begin_step(step);
  std::this_thread::sleep_for(sleep);
  context.add_work(work, "items/s");
  context.end_step();
}

double seconds_from(const std::vector<double>& seconds, std::size_t first) {
  return std::accumulate(seconds.begin() + static_cast<std::ptrdiff_t>(first), seconds.end(), 0.0);
}

TEST(RunContextWarmup, DefaultIsNoWarmupAndEveryStepCounts) {
  Device device(DeviceKind::host, {});
  RunContext context(device, Scale::tiny, 2);
  EXPECT_EQ(context.warmup_steps(), 0);
  timed_step(context, 0, std::chrono::milliseconds(3), 10);
  timed_step(context, 1, std::chrono::milliseconds(1), 10);
  const RunContext::Measured measured = context.measured();
  EXPECT_FALSE(measured.warmup_excluded);
  EXPECT_DOUBLE_EQ(measured.work, 20);
  EXPECT_DOUBLE_EQ(measured.seconds, seconds_from(context.step_seconds(), 0));
}

TEST(RunContextWarmup, TheWarmupStepsWorkAndTimeAreLeftOut) {
  Device device(DeviceKind::host, {});
  RunContext context(device, Scale::tiny, 4);
  context.set_warmup_steps(1);
  EXPECT_EQ(context.warmup_steps(), 1);
  // The warm-up step is slow (lazy kernel loading on cuda) and does less work here, so both
  // halves of the rate show whether it was left out.
  timed_step(context, 0, std::chrono::milliseconds(40), 1);
  for (int step = 1; step < 4; ++step) timed_step(context, step, std::chrono::milliseconds(2), 10);
  ASSERT_EQ(context.step_seconds().size(), 4u);  // nothing hidden: the warm-up step is kept
  EXPECT_GE(context.step_seconds()[0], 0.040);
  const RunContext::Measured measured = context.measured();
  EXPECT_TRUE(measured.warmup_excluded);
  EXPECT_DOUBLE_EQ(measured.work, 30);
  EXPECT_DOUBLE_EQ(measured.seconds, seconds_from(context.step_seconds(), 1));
  EXPECT_DOUBLE_EQ(context.work(), 31);  // the total is still there
  EXPECT_GT(measured.work / measured.seconds, context.work() / seconds_from(context.step_seconds(), 0));
}

TEST(RunContextWarmup, WorkBelongsToItsStepOrTheStepJustEndedOrAlwaysCountsBeforeTheFirst) {
  Device device(DeviceKind::host, {});
  RunContext context(device, Scale::tiny, 3);
  context.set_warmup_steps(1);
  context.add_work(5, "items/s");  // before any step: in no step, always counted
  context.begin_step(0);
  context.end_step();
  context.add_work(100, "items/s");  // after step 0 ended (gpt_train's order): step 0's
  context.begin_step(1);
  context.add_work(7, "items/s");  // inside step 1
  context.end_step();
  context.add_work(3, "items/s");  // after step 1 ended: step 1's
  context.begin_step(2);
  context.end_step();
  const RunContext::Measured measured = context.measured();
  EXPECT_TRUE(measured.warmup_excluded);
  EXPECT_DOUBLE_EQ(measured.work, 5 + 7 + 3);
  EXPECT_DOUBLE_EQ(measured.seconds, seconds_from(context.step_seconds(), 1));
  EXPECT_DOUBLE_EQ(context.work(), 115);
}

TEST(RunContextWarmup, WorkOfAStepThatNeverEndedIsNotInTheSteadyRate) {
  Device device(DeviceKind::host, {});
  RunContext context(device, Scale::tiny, 3);
  context.set_warmup_steps(1);
  timed_step(context, 0, std::chrono::milliseconds(1), 10);
  timed_step(context, 1, std::chrono::milliseconds(1), 10);
  context.begin_step(2);  // e.g. an OOM the scenario caught before end_step: no time for it
  context.add_work(10, "items/s");
  const RunContext::Measured measured = context.measured();
  EXPECT_TRUE(measured.warmup_excluded);
  EXPECT_DOUBLE_EQ(measured.work, 10);  // step 1's only
  EXPECT_DOUBLE_EQ(measured.seconds, context.step_seconds()[1]);
}

TEST(RunContextWarmup, WithoutASteadyStepEveryStepCountsSoARateIsStillReported) {
  Device device(DeviceKind::host, {});
  {
    // Fewer steps than the warm-up: the run ends inside it.
    RunContext context(device, Scale::tiny, 1);
    context.set_warmup_steps(2);
    timed_step(context, 0, std::chrono::milliseconds(2), 10);
    const RunContext::Measured measured = context.measured();
    EXPECT_FALSE(measured.warmup_excluded);
    EXPECT_DOUBLE_EQ(measured.work, 10);
    EXPECT_DOUBLE_EQ(measured.seconds, context.step_seconds()[0]);
    EXPECT_GT(measured.seconds, 0);
  }
  {
    // Steps == warm-up: the warm-up ended but no step followed it.
    RunContext context(device, Scale::tiny, 1);
    context.set_warmup_steps(1);
    timed_step(context, 0, std::chrono::milliseconds(2), 10);
    EXPECT_FALSE(context.measured().warmup_excluded);
    EXPECT_DOUBLE_EQ(context.measured().work, 10);
  }
  {
    // An OOM in the first step after the warm-up: that step never ended, so the warm-up is all
    // there is, and all the work counts as before warm-ups existed.
    RunContext context(device, Scale::tiny, 4);
    context.set_warmup_steps(1);
    timed_step(context, 0, std::chrono::milliseconds(2), 10);
    context.begin_step(1);
    context.add_work(10, "items/s");
    const RunContext::Measured measured = context.measured();
    EXPECT_FALSE(measured.warmup_excluded);
    EXPECT_DOUBLE_EQ(measured.work, 20);
    EXPECT_DOUBLE_EQ(measured.seconds, context.step_seconds()[0]);
  }
  {
    // An OOM in step 0: no step completed at all.
    RunContext context(device, Scale::tiny, 4);
    context.set_warmup_steps(1);
    context.begin_step(0);
    EXPECT_FALSE(context.measured().warmup_excluded);
    EXPECT_DOUBLE_EQ(context.measured().seconds, 0);
  }
}

TEST(RunContextWarmup, BadOrLateWarmupIsRejected) {
  Device device(DeviceKind::dry, {});
  RunContext context(device, Scale::tiny, 2);
  EXPECT_THROW(context.set_warmup_steps(-1), std::invalid_argument);
  context.set_warmup_steps(1);
  context.set_warmup_steps(0);  // may change its mind before the loop
  context.begin_step(0);
  EXPECT_THROW(context.set_warmup_steps(1), std::logic_error);
}

TEST(RunContextWarmup, TheRegisteredProfilerIsResetWhenTheLastWarmupStepEnds) {
  Device device(DeviceKind::host, {});  // ranges timed on the wall clock
  OpProfiler profiler(device);
  RunContext context(device, Scale::tiny, 4);
  context.set_profiler(&profiler);
  context.set_warmup_steps(2);
  { ProfileRange setup("setup"); }  // before the first step: warm-up too
  for (int step = 0; step < 4; ++step) {
    context.begin_step(step);
    {
      ProfileRange range(step < 2 ? "warmup.only" : "step");
      std::this_thread::sleep_for(std::chrono::milliseconds(step < 2 ? 30 : 2));
    }
    context.end_step();
    if (step == 0) {
      EXPECT_EQ(profiler.totals().size(), 2u) << "reset before the last warm-up step ended";
    }
    if (step == 1) {
      EXPECT_TRUE(profiler.totals().empty()) << "not reset when the last warm-up step ended";
    }
  }
  const std::vector<OpProfiler::Total> totals = profiler.totals();
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].name, "step");
  EXPECT_EQ(totals[0].calls, 2);
  EXPECT_GE(totals[0].milliseconds, 4.0);
  EXPECT_LE(totals[0].milliseconds, 1e3 * seconds_from(context.step_seconds(), 2));
}

TEST(RunContextWarmup, AnUnregisteredProfilerIsLeftAlone) {
  // The scenario's own profiler (spawn times its consumer with one) is active on the thread but
  // not the run's: its totals must cover every step.
  Device device(DeviceKind::host, {});
  OpProfiler scenario_profiler(device);
  RunContext context(device, Scale::tiny, 2);
  context.set_warmup_steps(1);
  for (int step = 0; step < 2; ++step) {
    context.begin_step(step);
    { ProfileRange range("consumer"); }
    context.end_step();
  }
  const std::vector<OpProfiler::Total> totals = scenario_profiler.totals();
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].calls, 2);
}

}  // namespace
}  // namespace oomlab
