// Bad input to the real oomlab binary: exactly one "oomlab: error: " line and exit code 2,
// never a stack trace or a crash. Plus `list` and `--help`.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/device/device.hpp"

namespace oomlab::cli_test {
namespace {

// The scenario these tests name when they need a real one; registered by scenarios/.
constexpr const char* kScenario = "fragmentation";

TEST(Cli, ListSucceeds) {
  Result result = run_oomlab({"list"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_NE(result.out.find(kScenario), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("expect oom"), std::string::npos) << result.out;
}

TEST(Cli, HelpSucceeds) {
  Result result = run_oomlab({"run", "--help"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("--budget"), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("__child"), std::string::npos);
}

TEST(Cli, UnknownScenarioListsTheValidOnes) {
  expect_usage_error({"run", "no-such-scenario", "--device", "dry"}, kScenario);
}

TEST(Cli, UnknownVariantListsTheValidOnes) {
  expect_usage_error({"run", kScenario, "--variant", "no-such-variant", "--device", "dry"},
                     "broken");
}

TEST(Cli, NegativeBudget) {
  expect_usage_error({"run", kScenario, "--device", "dry", "--budget", "-1"}, "-1");
}

TEST(Cli, BudgetWithUnknownUnit) {
  expect_usage_error({"run", kScenario, "--device", "dry", "--budget", "10XB"}, "10XB");
}

TEST(Cli, ZeroBudget) {
  expect_usage_error({"run", kScenario, "--device", "dry", "--budget", "0"}, "budget");
}

TEST(Cli, CudaWithoutGpu) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present: --device cuda is valid here";
  expect_usage_error({"run", kScenario, "--device", "cuda"}, "--device cuda");
  expect_usage_error({"suite", "--device", "cuda"}, "--device cuda");
}

TEST(Cli, UnknownDeviceAndScale) {
  expect_usage_error({"run", kScenario, "--device", "tpu"}, "tpu");
  expect_usage_error({"run", kScenario, "--device", "dry", "--scale", "huge"}, "huge");
  expect_usage_error({"suite", "--device", "dry", "--scale", "huge"}, "huge");
}

TEST(Cli, UnwritableOut) {
  expect_usage_error({"run", kScenario, "--device", "dry", "--out", "/nonexistent-dir/r.json"},
                     "/nonexistent-dir/r.json");
  TempDir dir;
  expect_usage_error({"run", kScenario, "--device", "dry", "--out", dir.path()}, "directory");
  expect_usage_error({"run", kScenario, "--device", "dry", "--trace", "/nonexistent-dir/t.json"},
                     "--trace");
}

TEST(Cli, UnwritableOutDir) {
  TempDir dir;
  expect_usage_error({"suite", "--device", "dry", "--out-dir", "/proc/oomlab-cannot-exist"},
                     "--out-dir");
}

TEST(Cli, BadAllocConf) {
  expect_usage_error({"run", kScenario, "--device", "dry", "--alloc-conf", "max_split_size_mb:x"},
                     "--alloc-conf");
  expect_usage_error({"run", kScenario, "--device", "dry", "--alloc-conf", "no_such_key:1"},
                     "no_such_key");
  expect_usage_error({"run", kScenario, "--device", "dry"}, "OOMLAB_ALLOC_CONF: invalid allocator settings",
                     {{"OOMLAB_ALLOC_CONF", "expandable_segments:maybe"}});
  // --alloc-conf is named as itself, not as the environment variable it was not read from.
  expect_usage_error({"run", kScenario, "--device", "dry", "--alloc-conf", "max_split_size_mb:1"},
                     "--alloc-conf: invalid allocator settings 'max_split_size_mb:1'");
}

TEST(Cli, BadSteps) {
  expect_usage_error({"run", kScenario, "--device", "dry", "--steps", "0"}, "--steps");
  expect_usage_error({"run", kScenario, "--device", "dry", "--steps", "-4"}, "--steps");
  expect_usage_error({"run", kScenario, "--device", "dry", "--steps", "many"}, "--steps");
  expect_usage_error({"run", kScenario, "--device", "dry", "--timeout", "-1"}, "--timeout");
  expect_usage_error({"suite", "--device", "dry", "--timeout", "-1"}, "--timeout");
}

TEST(Cli, ParserErrorsAreOneLineToo) {
  expect_usage_error({}, "subcommand");
  expect_usage_error({"explode"}, "explode");
  expect_usage_error({"run"}, "scenario");
  expect_usage_error({"run", kScenario, "--no-such-flag"}, "--no-such-flag");
}

TEST(Cli, AMisspeltOptionGetsASuggestion) {
  expect_usage_error({"run", kScenario, "--varient", "broken"}, "--varient; did you mean --variant?");
  expect_usage_error({"bisect", kScenario, "--knb", "batch"}, "did you mean --knob?");
  expect_usage_error({"suite", "--out-dri", "x"}, "did you mean --out-dir?");
  Result far = run_oomlab({"run", kScenario, "--zzzzzzzz"});
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
}

}  // namespace
}  // namespace oomlab::cli_test
