// The runner records every way a variant can end, in a child process (the real path) and in
// this process, using the test-only runner-test scenario.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/runner/atomic_file.hpp"
#include "harness/runner/runner.hpp"
#include "harness/runner/tests/runner_test_scenario.hpp"

namespace oomlab {
namespace {

// Under AddressSanitizer a child's SIGSEGV is caught and turned into a report and exit code 1;
// the story here is a child that dies by the signal, so the children keep the default handler.
#if defined(__SANITIZE_ADDRESS__)
const bool kChildrenDieBySignal = [] {
  return ::setenv("ASAN_OPTIONS", "handle_segv=0:handle_abort=0:detect_leaks=0", 1) == 0;
}();
#endif

using runner_test::kOomStep;
using runner_test::kRunnerTestSteps;

RunRequest request_for(const std::string& variant, DeviceKind device = DeviceKind::dry) {
  RunRequest request;
  request.scenario = runner_test::kRunnerTestScenario;
  request.variant = variant;
  request.device = device;
  request.scale = Scale::tiny;
  request.progress = false;
  return request;
}

void expect_common_fields(const RunRecord& record, const std::string& variant) {
  EXPECT_EQ(record.schema_version, kRunRecordSchemaVersion);
  EXPECT_EQ(record.scenario, runner_test::kRunnerTestScenario);
  EXPECT_EQ(record.variant, variant);
  EXPECT_EQ(record.scale, "tiny");
  EXPECT_EQ(record.steps, kRunnerTestSteps);
  EXPECT_EQ(record.budget.bytes, runner_test::kRunnerTestBudget);
  EXPECT_EQ(record.budget.text, "64.00MiB");
  EXPECT_FALSE(record.git_commit.empty());
  EXPECT_EQ(record.timestamp.size(), 20u);
  EXPECT_FALSE(record.oomlab_version.empty());
}

// Another rank of a sharded run: the same request again as that rank, on the rank-th GPU this
// process sees, joining the communicator it was given.
TEST(RankProcessRunner, RunsTheRequestAsThatRankOnItsGpu) {
  const char* before = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string saved = before ? before : "";
  ::setenv("CUDA_VISIBLE_DEVICES", "3,5", 1);
  std::unique_ptr<RankProcess> rank = launch_rank_process(request_for("ok"), 1, "communicator-id");
  EXPECT_THROW(launch_rank_process(request_for("ok"), 2, "communicator-id"), std::invalid_argument);
  if (before) ::setenv("CUDA_VISIBLE_DEVICES", saved.c_str(), 1);
  else ::unsetenv("CUDA_VISIBLE_DEVICES");
  const RunRecord record = rank->finish();
  EXPECT_FALSE(rank->running());
  ASSERT_EQ(record.outcome.status, OutcomeStatus::ok) << record.outcome.message;
  EXPECT_EQ(record.metrics.at("shard_rank"), 1);
  EXPECT_EQ(record.metrics.at("visible_gpu"), 5);
}

TEST(RankProcessRunner, ARankThatDiesSaysHowAndOneStillRunningIsKilled) {
  std::unique_ptr<RankProcess> crashing = launch_rank_process(request_for("segv"), 1, "id");
  const RunRecord record = crashing->finish();
  EXPECT_EQ(record.outcome.status, OutcomeStatus::crash);
  EXPECT_NE(record.outcome.message.find("SIGSEGV"), std::string::npos) << record.outcome.message;
  std::unique_ptr<RankProcess> hanging = launch_rank_process(request_for("hang"), 1, "id");
  EXPECT_TRUE(hanging->running());
  const auto start = std::chrono::steady_clock::now();
  hanging.reset();  // killed and reaped, not waited for
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ChildRunner, OkVariantTimesEveryStep) {
  RunRecord record = run_variant_in_child(request_for("ok"));
  expect_common_fields(record, "ok");
  EXPECT_EQ(record.outcome.status, OutcomeStatus::ok) << record.outcome.message;
  EXPECT_TRUE(record.matches_expectation);
  EXPECT_EQ(record.expected, "ok");
  ASSERT_EQ(record.step_seconds.size(), static_cast<std::size_t>(kRunnerTestSteps));
  for (double seconds : record.step_seconds) EXPECT_GT(seconds, 0.0);
  // dry does no work: a rate would be fiction, so none is recorded.
  EXPECT_EQ(record.throughput.unit, "");
  EXPECT_EQ(record.throughput.value, 0.0);
  EXPECT_EQ(record.metrics.at("finished_steps"), kRunnerTestSteps);
  EXPECT_EQ(record.device.kind, "dry");
  EXPECT_EQ(record.device.name, "dry (no backing)");
  EXPECT_EQ(record.memory.peak_allocated, 4 * MiB);
  EXPECT_GE(record.memory.peak_reserved, 4 * MiB);
  EXPECT_GE(record.memory.peak_device_used, record.memory.peak_reserved);
  EXPECT_EQ(record.memory.per_tag_peak.at("weights"), 4 * MiB);
  EXPECT_EQ(record.memory.per_tag_peak.at("activations"), 0u);
  EXPECT_EQ(record.memory.num_ooms, 0u);
}

TEST(ChildRunner, OomIsRecordedWithDiagnosisAndStep) {
  RunRecord record = run_variant_in_child(request_for("oom"));
  expect_common_fields(record, "oom");
  EXPECT_EQ(record.outcome.status, OutcomeStatus::oom) << record.outcome.message;
  EXPECT_EQ(record.outcome.diagnosis, "capacity");
  EXPECT_EQ(record.outcome.step, kOomStep);
  EXPECT_FALSE(record.outcome.message.empty());
  EXPECT_EQ(record.expected, "oom");
  EXPECT_TRUE(record.matches_expectation);
  EXPECT_GE(record.memory.num_ooms, 1u);
  EXPECT_EQ(record.step_seconds.size(), static_cast<std::size_t>(kOomStep));
}

TEST(ChildRunner, SegfaultIsACrashWithItsSignal) {
  RunRecord record = run_variant_in_child(request_for("segv"));
  expect_common_fields(record, "segv");
  EXPECT_EQ(record.outcome.status, OutcomeStatus::crash);
  EXPECT_EQ(record.outcome.signal, SIGSEGV);
  EXPECT_NE(record.outcome.message.find("SIGSEGV"), std::string::npos) << record.outcome.message;
  EXPECT_FALSE(record.matches_expectation);
}

TEST(ChildRunner, AbortIsACrashWithItsSignal) {
  RunRecord record = run_variant_in_child(request_for("abort"));
  EXPECT_EQ(record.outcome.status, OutcomeStatus::crash);
  EXPECT_EQ(record.outcome.signal, SIGABRT);
  EXPECT_NE(record.outcome.message.find("SIGABRT"), std::string::npos) << record.outcome.message;
}

TEST(ChildRunner, ExceptionIsAnErrorWithItsMessageAndStep) {
  RunRecord record = run_variant_in_child(request_for("throws"));
  EXPECT_EQ(record.outcome.status, OutcomeStatus::error);
  EXPECT_EQ(record.outcome.message, "scenario failed on purpose");
  EXPECT_EQ(record.outcome.step, kOomStep);
  EXPECT_FALSE(record.matches_expectation);
}

TEST(ChildRunner, ExitWithoutARecordIsAnError) {
  RunRecord record = run_variant_in_child(request_for("exit"));
  expect_common_fields(record, "exit");
  EXPECT_EQ(record.outcome.status, OutcomeStatus::error);
  EXPECT_NE(record.outcome.message.find("exited with code 7"), std::string::npos)
      << record.outcome.message;
}

TEST(ChildRunner, VariantsAfterACrashStillRun) {
  EXPECT_EQ(run_variant_in_child(request_for("segv")).outcome.status, OutcomeStatus::crash);
  EXPECT_EQ(run_variant_in_child(request_for("ok")).outcome.status, OutcomeStatus::ok);
}

TEST(ChildRunner, AVariantPastItsTimeLimitIsKilledAndRecordedAsACrash) {
  RunRequest request = request_for("hang");
  request.timeout_seconds = 0.5;
  const auto start = std::chrono::steady_clock::now();
  RunRecord record = run_variant_in_child(request);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(record.outcome.status, OutcomeStatus::crash) << record.outcome.message;
  EXPECT_EQ(record.outcome.signal, SIGKILL);
  EXPECT_NE(record.outcome.message.find("time limit"), std::string::npos) << record.outcome.message;
  EXPECT_FALSE(record.matches_expectation);
}

TEST(ChildRunner, MissingExecutableIsAnError) {
  RunRecord record = run_variant_in_child(request_for("ok"), "/nonexistent/oomlab");
  EXPECT_EQ(record.outcome.status, OutcomeStatus::error);
  EXPECT_NE(record.outcome.message.find("/nonexistent/oomlab"), std::string::npos) << record.outcome.message;
}

TEST(ChildRunner, HostBackendRunsToo) {
  RunRecord record = run_variant_in_child(request_for("oom", DeviceKind::host));
  EXPECT_EQ(record.outcome.status, OutcomeStatus::oom) << record.outcome.message;
  EXPECT_EQ(record.device.kind, "host");
  EXPECT_GT(record.device.total_memory, 0u);
}

TEST(InProcessRunner, OkAndOomWithoutAChild) {
  RunRecord ok = run_variant_in_process(request_for("ok", DeviceKind::host));
  EXPECT_EQ(ok.outcome.status, OutcomeStatus::ok) << ok.outcome.message;
  EXPECT_EQ(ok.step_seconds.size(), static_cast<std::size_t>(kRunnerTestSteps));
  RunRecord oom = run_variant_in_process(request_for("oom", DeviceKind::dry));
  EXPECT_EQ(oom.outcome.status, OutcomeStatus::oom);
  EXPECT_EQ(oom.outcome.diagnosis, "capacity");
}

TEST(InProcessRunner, BadRequestsBecomeErrorRecords) {
  RunRequest request = request_for("no-such-variant");
  RunRecord record = run_variant_in_process(request);
  EXPECT_EQ(record.outcome.status, OutcomeStatus::error);
  EXPECT_NE(record.outcome.message.find("no-such-variant"), std::string::npos);
}

TEST(InProcessRunner, WritesTheTraceWhenAsked) {
  char pattern[] = "/tmp/oomlab-trace-test-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  RunRequest request = request_for("ok");
  request.trace_path = std::string(pattern) + "/trace.json";
  RunRecord record = run_variant_in_process(request);
  EXPECT_EQ(record.outcome.status, OutcomeStatus::ok) << record.outcome.message;
  auto trace = nlohmann::json::parse(read_text_file(request.trace_path));
  EXPECT_FALSE(trace.empty());
  std::filesystem::remove_all(pattern);
}

// A NaN metric was written as null, which the parent could not read: the run was lost ("exited
// without a record"). Now the metric is left out with a warning, and the run keeps its outcome.
TEST(ChildRunner, ANonFiniteMetricIsLeftOutWithAWarning) {
  RunRecord record = run_variant_in_child(request_for("nan-metric"));
  EXPECT_EQ(record.outcome.status, OutcomeStatus::ok) << record.outcome.message;
  EXPECT_TRUE(record.matches_expectation);
  EXPECT_EQ(record.metrics.count("per_element"), 0u);
  EXPECT_EQ(record.metrics.at("finished_steps"), kRunnerTestSteps);
  ASSERT_EQ(record.warnings.size(), 1u);
  EXPECT_NE(record.warnings[0].find("per_element"), std::string::npos) << record.warnings[0];
}

// A trace that cannot be written is a warning on the record, never the run's outcome.
TEST(ChildRunner, ATraceWriteFailureKeepsTheOutcome) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  RunRequest request = request_for("oom");
  request.trace_path = "/dev/full";
  RunRecord record = run_variant_in_child(request);
  EXPECT_EQ(record.outcome.status, OutcomeStatus::oom) << record.outcome.message;
  EXPECT_TRUE(record.matches_expectation);
  ASSERT_EQ(record.warnings.size(), 1u);
  EXPECT_EQ(record.warnings[0].rfind(kTraceNotWritten, 0), 0u) << record.warnings[0];
  EXPECT_EQ(std::filesystem::status("/dev/full").type(), std::filesystem::file_type::character);
}

TEST(ResolveRun, LayersAllocatorSettings) {
  RunRequest request = request_for("ok");
  request.alloc_conf = "max_split_size_mb:128,expandable_segments:true";
  ResolvedRun resolved = resolve_run(request);
  EXPECT_TRUE(resolved.config.expandable_segments);              // from --alloc-conf
  EXPECT_EQ(resolved.config.max_split_size, 128ull << 20);        // explicit settings win
  request.alloc_conf = "expandable_segments:true";
  resolved = resolve_run(request);
  EXPECT_EQ(resolved.config.max_split_size, runner_test::kVariantMaxSplit);  // else the variant's
  EXPECT_EQ(resolved.config.budget, runner_test::kRunnerTestBudget);
  EXPECT_EQ(resolved.steps, kRunnerTestSteps);
  request.steps = 9;
  request.budget = "rtx4090";
  resolved = resolve_run(request);
  EXPECT_EQ(resolved.steps, 9);
  EXPECT_EQ(resolved.budget.profile, "rtx4090");
}

TEST(ResolveRun, BadInputIsOneClearLine) {
  auto expect_error = [](RunRequest request, const std::string& fragment) {
    try {
      resolve_run(request);
      ADD_FAILURE() << "expected an error mentioning " << fragment;
    } catch (const std::invalid_argument& e) {
      std::string message = e.what();
      EXPECT_NE(message.find(fragment), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  };
  RunRequest unknown_scenario = request_for("ok");
  unknown_scenario.scenario = "no-such-scenario";
  expect_error(unknown_scenario, runner_test::kRunnerTestScenario);  // lists the valid ones
  expect_error(request_for("okk"), "ok, oom, throws");
  RunRequest bad_budget = request_for("ok");
  bad_budget.budget = "10XB";
  expect_error(bad_budget, "10XB");
  RunRequest negative_budget = request_for("ok");
  negative_budget.budget = "-1";
  expect_error(negative_budget, "-1");
  RunRequest bad_conf = request_for("ok");
  bad_conf.alloc_conf = "max_split_size_mb:abc";
  expect_error(bad_conf, "--alloc-conf");
  RunRequest bad_steps = request_for("ok");
  bad_steps.steps = -3;
  expect_error(bad_steps, "--steps");
  if (!cuda_available()) expect_error(request_for("ok", DeviceKind::cuda), "--device cuda");
}

}  // namespace
}  // namespace oomlab
