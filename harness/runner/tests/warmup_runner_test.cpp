// The runner with a scenario that declares a warm-up step: the record keeps every step's time
// and the warm-up count, its throughput and --profile totals cover the steps after the warm-up,
// and a run that never got past the warm-up still reports a rate over what it ran.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <thread>

#include "harness/device/op_profiler.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/tags.hpp"
#include "harness/runner/run_context.hpp"
#include "harness/runner/runner.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab {
namespace {

constexpr const char* kWarmupScenario = "warmup-runner-test";
constexpr int kSteps = 3;
constexpr double kItemsPerStep = 10;
constexpr auto kWarmupSleep = std::chrono::milliseconds(40);
constexpr auto kSteadySleep = std::chrono::milliseconds(4);

// Step 0 is slow (a stand-in for cuda's lazy kernel loading) and opens its own range; every
// step times a "work" range. "oom-in-warmup" runs out of memory in step 0.
class WarmupScenario : public Scenario {
 public:
  std::string name() const override { return kWarmupScenario; }
  std::string summary() const override { return "runner test: one slow warm-up step"; }
  std::vector<VariantSpec> variants() const override {
    return {{"ok", "a slow first step, then steady ones", Expect::ok},
            {"oom-in-warmup", "runs out of memory in the warm-up step", Expect::oom}};
  }
  std::string budget(Scale) const override { return "64MiB"; }
  int default_steps(Scale) const override { return kSteps; }
  void run(const std::string& variant, RunContext& context) const override {
    context.set_warmup_steps(1);
    for (int step = 0; step < context.steps(); ++step) {
      context.begin_step(step);
      if (step == 0) {
        ProfileRange set_up("warmup.set_up");
        std::this_thread::sleep_for(kWarmupSleep);
        if (variant == "oom-in-warmup") {
          memory::TagScope tag(memory::Tag::activations);
          context.allocator().allocate(128 * MiB);
        }
      }
      {
        ProfileRange work("work");
        std::this_thread::sleep_for(kSteadySleep);
      }
      context.add_work(kItemsPerStep, "items/s");
      context.end_step();
    }
  }
};

OOMLAB_REGISTER_SCENARIO(WarmupScenario);

RunRequest host_request(const std::string& variant, int steps = 0) {
  RunRequest request;
  request.scenario = kWarmupScenario;
  request.variant = variant;
  request.device = DeviceKind::host;  // host does the work, so there is a rate
  request.scale = Scale::tiny;
  request.steps = steps;
  request.progress = false;
  request.profile = true;
  return request;
}

double sum(const std::vector<double>& seconds, std::size_t first) {
  return std::accumulate(seconds.begin() + static_cast<std::ptrdiff_t>(first), seconds.end(), 0.0);
}

TEST(WarmupRunner, ThroughputAndProfileCoverTheStepsAfterTheWarmup) {
  const RunRecord record = run_variant_in_process(host_request("ok"));
  ASSERT_EQ(record.outcome.status, OutcomeStatus::ok) << record.outcome.message;
  EXPECT_EQ(record.warmup_steps, 1);
  ASSERT_EQ(record.step_seconds.size(), static_cast<std::size_t>(kSteps));  // warm-up kept
  EXPECT_GE(record.step_seconds[0], 0.040);
  EXPECT_EQ(record.throughput.unit, "items/s");
  EXPECT_DOUBLE_EQ(record.throughput.value, (kSteps - 1) * kItemsPerStep / sum(record.step_seconds, 1));
  // The slow step is out: the rate beats the all-steps one it replaced.
  EXPECT_GT(record.throughput.value, kSteps * kItemsPerStep / sum(record.step_seconds, 0));

  EXPECT_EQ(record.metrics.count("profile_ms.warmup.set_up"), 0u) << "the warm-up was profiled";
  ASSERT_EQ(record.metrics.count("profile_ms.work"), 1u);
  const double work_ms = record.metrics.at("profile_ms.work");
  EXPECT_GE(work_ms, 2 * 4.0);                                  // two steady steps of 4 ms
  EXPECT_LE(work_ms, 1e3 * sum(record.step_seconds, 1));        // and no more than they took

  // The field survives the record's JSON.
  EXPECT_EQ(run_record_from_json(to_json(record)).warmup_steps, 1);
}

TEST(WarmupRunner, ARunThatEndsWithItsWarmupReportsTheRateOfEveryStep) {
  const RunRecord record = run_variant_in_process(host_request("ok", 1));
  ASSERT_EQ(record.outcome.status, OutcomeStatus::ok) << record.outcome.message;
  EXPECT_EQ(record.warmup_steps, 1);
  ASSERT_EQ(record.step_seconds.size(), 1u);
  EXPECT_DOUBLE_EQ(record.throughput.value, kItemsPerStep / record.step_seconds[0]);
  // The profiler was reset as the warm-up ended: nothing of the run after it was profiled.
  EXPECT_EQ(record.metrics.count("profile_ms.work"), 0u);
}

TEST(WarmupRunner, AnOomInTheWarmupRecordsNoRateButProfilesWhatRan) {
  const RunRecord record = run_variant_in_process(host_request("oom-in-warmup"));
  EXPECT_EQ(record.outcome.status, OutcomeStatus::oom) << record.outcome.message;
  EXPECT_EQ(record.outcome.step, 0);
  EXPECT_EQ(record.warmup_steps, 1);
  EXPECT_TRUE(record.step_seconds.empty());
  EXPECT_EQ(record.throughput.unit, "");  // no completed step, no time to divide by
  EXPECT_EQ(record.throughput.value, 0.0);
  // The warm-up never ended, so the profiler was never reset: the failed step is what there is.
  ASSERT_EQ(record.metrics.count("profile_ms.warmup.set_up"), 1u);
  EXPECT_GE(record.metrics.at("profile_ms.warmup.set_up"), 40.0);
}

}  // namespace
}  // namespace oomlab
