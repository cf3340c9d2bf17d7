// Regression: every scenario variant run on dry at full scale must reproduce the committed
// baseline (results/baselines/dry-full) exactly — outcome, diagnosis, peak allocated and
// reserved, per-tag peaks. dry is deterministic, so any difference is a behaviour change: either
// a bug, or an intended change whose baseline is regenerated in the same commit with
//   oomlab suite --device dry --scale full --out-dir results/baselines/dry-full
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/run_record.hpp"

namespace oomlab::cli_test {
namespace {

namespace fs = std::filesystem;

const fs::path kBaselineDir = fs::path(OOMLAB_SOURCE_DIR) / "results" / "baselines" / "dry-full";

std::map<std::string, RunRecord> records_in(const fs::path& dir) {
  std::map<std::string, RunRecord> records;
  const auto suite = nlohmann::ordered_json::parse(read_text_file((dir / "suite.json").string()));
  for (const auto& run : suite.at("runs")) {
    RunRecord record =
        run_record_from_text(read_text_file((dir / run.at("record").get<std::string>()).string()));
    records[record.scenario + "/" + record.variant] = record;
  }
  return records;
}

std::string differences(const RunRecord& want, const RunRecord& got) {
  std::ostringstream out;
  auto compare = [&](const char* what, const auto& a, const auto& b) {
    if (!(a == b)) out << "  " << what << ": baseline " << a << ", now " << b << "\n";
  };
  compare("outcome", outcome_status_name(want.outcome.status), outcome_status_name(got.outcome.status));
  compare("diagnosis", want.outcome.diagnosis, got.outcome.diagnosis);
  compare("peak_allocated", want.memory.peak_allocated, got.memory.peak_allocated);
  compare("peak_reserved", want.memory.peak_reserved, got.memory.peak_reserved);
  for (const auto& [tag, bytes] : want.memory.per_tag_peak) {
    auto it = got.memory.per_tag_peak.find(tag);
    compare(("peak of tag " + tag).c_str(), bytes, it == got.memory.per_tag_peak.end() ? 0 : it->second);
  }
  return out.str();
}

TEST(DryBaselines, EveryVariantMatchesItsCommittedBaselineExactly) {
  ASSERT_TRUE(fs::exists(kBaselineDir / "suite.json")) << "no baseline at " << kBaselineDir;
  TempDir dir;
  Result result = run_oomlab({"suite", "--device", "dry", "--scale", "full", "--out-dir", dir.path()});
  ASSERT_NE(result.exit_code, 2) << result.err;
  const auto baseline = records_in(kBaselineDir);
  const auto now = records_in(dir.path());
  for (const auto& [name, record] : now) {
    auto it = baseline.find(name);
    if (it == baseline.end()) {
      ADD_FAILURE() << name << " has no baseline: regenerate " << kBaselineDir;
      continue;
    }
    const std::string diff = differences(it->second, record);
    EXPECT_TRUE(diff.empty()) << name << " differs from its baseline:\n" << diff;
  }
  for (const auto& [name, record] : baseline) {
    EXPECT_TRUE(now.count(name)) << name << " has a baseline but no longer runs";
  }
}

}  // namespace
}  // namespace oomlab::cli_test
