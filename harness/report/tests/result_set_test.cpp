// load_result_set: files, arrays, folders (suite folders, nested), and bad input as InputError.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/report/baseline_file.hpp"
#include "harness/report/input_error.hpp"
#include "harness/report/result_set.hpp"
#include "harness/report/tests/sample_records.hpp"

namespace oomlab::report {
namespace {

using testing::leak_record;
using testing::ScratchDir;
using testing::training_record;

std::string error_of(const std::string& path) {
  try {
    load_result_set(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ResultSet, ReadsARecordAnArrayAndABaseline) {
  ScratchDir dir;
  const std::string one = dir.write("one.json", to_json(leak_record()).dump());
  EXPECT_EQ(load_result_set(one).records.size(), 1u);
  nlohmann::ordered_json array = {to_json(leak_record()), to_json(training_record())};
  const ResultSet both = load_result_set(dir.write("two.json", array.dump()));
  ASSERT_EQ(both.records.size(), 2u);
  EXPECT_EQ(both.describe(), "2 run records (cuda NVIDIA H200, dry)");
  const ResultSet baseline = load_result_set(dir.write("b.json", baseline_json(leak_record()).dump()));
  ASSERT_EQ(baseline.records.size(), 1u);
  EXPECT_TRUE(baseline.records.front().baseline);
}

TEST(ResultSet, ACudaRecordSaysWhatRan) {
  ScratchDir dir;
  RunRecord ampere = leak_record();
  ampere.device.kind = "cuda";
  ampere.device.name = "NVIDIA H200";
  ampere.device.image = "compute_80 PTX (JIT)";
  ampere.device.engines = {{"conv", "mma.sync"}, {"matmul", "cublasLt"}};
  EXPECT_EQ(load_result_set(dir.write("a.json", to_json(ampere).dump())).describe(),
            "1 run record (cuda NVIDIA H200 [compute_80 PTX (JIT): conv mma.sync, matmul cublasLt])");
}

TEST(ResultSet, AFolderHoldsEveryRecordBelowItAndSaysWhatItSkipped) {
  ScratchDir dir;
  dir.write("suite/srgan_leak.broken.dry-full.json", to_json(leak_record()).dump());
  dir.write("full/gpt_train.bf16.cuda-small.json", to_json(training_record()).dump());
  dir.write("suite/suite.json", R"({"schema_version": 3, "complete": false, "runs": []})");
  dir.write("host_path_bench.json", R"({"cores": 16})");
  dir.write(".hidden/x.json", "not json");
  const ResultSet set = load_result_set(dir.path());
  ASSERT_EQ(set.records.size(), 2u);
  EXPECT_EQ(set.records[0].file, "full/gpt_train.bf16.cuda-small.json");
  ASSERT_EQ(set.notes.size(), 2u);
  EXPECT_NE(set.notes[0].find("suite/suite.json says the suite did not complete"), std::string::npos) << set.notes[0];
  EXPECT_NE(set.notes[1].find("skipped 1 JSON file(s)"), std::string::npos) << set.notes[1];
  EXPECT_NE(set.notes[1].find("host_path_bench.json"), std::string::npos) << set.notes[1];
  // suite.json named directly stands for its folder.
  EXPECT_EQ(load_result_set(dir.path("suite/suite.json")).records.size(), 1u);
}

// Google Benchmark writes the cv of a counter whose mean is 0 as a bare NaN (spawn_loader_bench
// did on the H200): that counter is skipped, the rest is read; "NaN" inside a string stays text.
TEST(ResultSet, BenchmarkJsonWithNaNIsReadWithoutTheNonFiniteCounters) {
  ScratchDir dir;
  const std::string path = dir.write("bench.json", R"({
    "context": {"gpu": "NVIDIA H200", "note": "NaN inf"},
    "benchmarks": [
      {"name": "BM_a_mean", "run_name": "BM_a", "run_type": "aggregate", "aggregate_name": "mean",
       "real_time": 2.0, "time_unit": "ms", "growth": 0.0, "rate": 5.0},
      {"name": "BM_a_cv", "run_name": "BM_a", "run_type": "aggregate", "aggregate_name": "cv",
       "real_time": 0.1, "time_unit": "ms", "growth": NaN, "rate": -Infinity}
    ]})");
  const ResultSet set = load_result_set(path);
  ASSERT_EQ(set.benchmarks.size(), 1u);
  EXPECT_EQ(set.benchmark_devices, std::vector<std::string>{"NVIDIA H200"});
  EXPECT_DOUBLE_EQ(set.benchmarks.front().counters.front().value, 2.0);
  EXPECT_NE(error_of(dir.write("bad.json", "{\"a\": NaNa}")).find("bad.json: not valid JSON"), std::string::npos);
}

TEST(ResultSet, BadInputIsOneLineNamingThePath) {
  ScratchDir dir;
  EXPECT_NE(error_of(dir.path("missing.json")).find("missing.json: no such file or folder"), std::string::npos);
  EXPECT_NE(error_of(dir.write("bad.json", "{not json")).find("bad.json: not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(dir.write("other.json", R"({"cores": 16})")).find("not a run record"), std::string::npos);
  auto wrong = to_json(leak_record());
  wrong["memory"].erase("peak_allocated");
  EXPECT_NE(error_of(dir.write("wrong.json", wrong.dump())).find("missing field memory.peak_allocated"),
            std::string::npos);
  ScratchDir empty;
  EXPECT_NE(error_of(empty.path()).find("holds no run records"), std::string::npos);
  for (const std::string& message : {error_of(dir.path("missing.json")), error_of(empty.path())}) {
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace oomlab::report
