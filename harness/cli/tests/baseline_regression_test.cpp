// Regression: every scenario variant run on dry must reproduce its committed baseline exactly,
// field by field (harness/report/record_fields.hpp: outcome, diagnosis, OOM step, budget, knobs,
// peaks, need, per-tag peaks, allocator counts, the leak and prediction metrics, ...). dry is
// deterministic, so any difference is a behaviour change: a bug, or an intended change whose
// baselines are regenerated in the same commit with
//   oomlab suite --device dry --scale full --update-baselines
//   oomlab suite --device dry --scale small --update-baselines
// (run from the repository root; `git diff results/baselines` then shows exactly what changed).
// OOMLAB_BASELINES=DIR checks against DIR/dry-full and DIR/dry-small instead of the committed ones.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/report/baseline_check.hpp"
#include "harness/report/baseline_file.hpp"
#include "harness/report/result_set.hpp"

namespace oomlab::cli_test {
namespace {

std::string baselines_root() {
  const char* dir = std::getenv("OOMLAB_BASELINES");
  return dir && *dir ? dir : std::string(OOMLAB_SOURCE_DIR) + "/results/baselines";
}

void expect_suite_matches_baselines(const std::string& scale) {
  const std::string folder = report::baseline_folder(baselines_root(), "dry", scale);
  TempDir dir;
  const Result result = run_oomlab({"suite", "--device", "dry", "--scale", scale, "--out-dir", dir.path()});
  ASSERT_NE(result.exit_code, 2) << result.err;
  const report::ResultSet fresh = report::load_result_set(dir.path());
  const report::BaselineCheck check = report::check_against_baselines(folder, fresh.records);
  std::string failures;
  for (const std::string& failure : check.failures) failures += "  " + failure + "\n";
  EXPECT_TRUE(check.passed()) << check.failures.size() << " of " << fresh.records.size()
                              << " variants differ from " << folder << ":\n"
                              << failures << "If the change is intended, regenerate: "
                              << report::regenerate_command("dry", scale);
  EXPECT_GT(check.compared, 0u);
}

TEST(DryBaselines, FullScaleMatchesItsBaselinesExactly) { expect_suite_matches_baselines("full"); }

TEST(DryBaselines, SmallScaleMatchesItsBaselinesExactly) { expect_suite_matches_baselines("small"); }

}  // namespace
}  // namespace oomlab::cli_test
