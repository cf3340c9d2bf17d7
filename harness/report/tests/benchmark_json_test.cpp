// Google Benchmark JSON: the committed H200 files, repetitions as noise, counter directions.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/report/benchmark_json.hpp"
#include "harness/report/comparison.hpp"
#include "harness/report/comparison_print.hpp"
#include "harness/report/result_set.hpp"

namespace oomlab::report {
namespace {

const std::string kH200 = std::string(OOMLAB_SOURCE_DIR) + "/results/h200/";

TEST(BenchmarkJson, ReadsTheCommittedConvBenchmarks) {
  const ResultSet set = load_result_set(kH200 + "conv_bench.json");
  ASSERT_EQ(set.benchmarks.size(), 120u);
  ASSERT_EQ(set.benchmark_devices, std::vector<std::string>{"NVIDIA H200"});
  const BenchmarkResult& first = set.benchmarks.front();
  EXPECT_EQ(first.name, "BM_conv2d_ours/problem:0/dtype:0/pass:0/manual_time");
  EXPECT_EQ(first.label, "B4 64->64 3x3 256x256 bf16 forward");
  std::vector<std::string> names;
  for (const BenchmarkCounter& counter : first.counters) names.push_back(counter.name);
  // Manual (GPU) timing: no cpu_time; every user counter.
  EXPECT_EQ(names, (std::vector<std::string>{"real_time", "TFLOP/s", "cudnn_ms", "ours_ms", "vs_cudnn"}));
  EXPECT_EQ(first.counters.front().unit, "ms");
  // Repetitions (ci/gpu.sh runs three; the committed run two): the noise is their spread.
  EXPECT_GT(first.counters.front().noise, 0);
  EXPECT_LT(first.counters.front().noise, 0.2);
}

TEST(BenchmarkJson, RepetitionsGiveTheMeanAndTheNoise) {
  const auto json = nlohmann::ordered_json::parse(R"({
    "context": {"gpu": "NVIDIA A100"},
    "benchmarks": [
      {"name": "BM_a/repeats:2", "run_name": "BM_a", "run_type": "iteration", "real_time": 1.0, "cpu_time": 1.0, "time_unit": "us", "GB/s": 100},
      {"name": "BM_a/repeats:2", "run_name": "BM_a", "run_type": "iteration", "real_time": 3.0, "cpu_time": 1.0, "time_unit": "us", "GB/s": 300},
      {"name": "BM_a_mean", "run_name": "BM_a", "run_type": "aggregate", "aggregate_name": "mean", "real_time": 2.0, "time_unit": "us"},
      {"name": "BM_b_mean", "run_name": "BM_b", "run_type": "aggregate", "aggregate_name": "mean", "real_time": 10.0, "time_unit": "us"},
      {"name": "BM_b_stddev", "run_name": "BM_b", "run_type": "aggregate", "aggregate_name": "stddev", "real_time": 1.0, "time_unit": "us"},
      {"name": "BM_c", "run_name": "BM_c", "error_occurred": true, "error_message": "no GPU"}
    ]})");
  ASSERT_TRUE(is_benchmark_json(json));
  EXPECT_EQ(benchmark_device(json), "NVIDIA A100");
  const auto results = read_benchmarks(json, "x.json");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].counters[0].name, "real_time");
  EXPECT_DOUBLE_EQ(results[0].counters[0].value, 2.0);
  EXPECT_NEAR(results[0].counters[0].noise, 0.7071, 1e-3);  // stddev sqrt(2) over mean 2
  EXPECT_EQ(results[0].counters[2].name, "GB/s");
  EXPECT_DOUBLE_EQ(results[1].counters[0].value, 10.0);
  EXPECT_DOUBLE_EQ(results[1].counters[0].noise, 0.1);
}

TEST(BenchmarkJson, CounterDirections) {
  for (const char* lower : {"real_time", "cpu_time", "cudnn_ms", "ms.fwd.attention", "peak_bytes", "ns_per_pair",
                            "activations_peak_GB", "device_used_MiB"}) {
    EXPECT_EQ(counter_direction(lower), Better::lower) << lower;
  }
  for (const char* higher : {"TFLOP/s", "GB/s", "bytes_per_second", "tokens_per_s", "vs_cudnn", "ratio_to_cublas"}) {
    EXPECT_EQ(counter_direction(higher), Better::higher) << higher;
  }
  for (const char* unknown : {"final_loss", "contexts", "gpu_idle_fraction"}) {
    EXPECT_EQ(counter_direction(unknown), Better::unknown) << unknown;
  }
}

TEST(BenchmarkJson, TwoGpusCompareInOneTable) {
  ResultSet h200 = load_result_set(kH200 + "conv_bench.json");
  ResultSet other = h200;
  other.source = "other.json";
  for (BenchmarkResult& result : other.benchmarks) {
    for (BenchmarkCounter& counter : result.counters) {
      if (counter.name == "TFLOP/s") counter.value *= 0.5;  // a slower card
    }
  }
  const Comparison c = compare_result_sets(h200, other, {});
  EXPECT_EQ(c.count(Verdict::worse), h200.benchmarks.size());
  const std::string text = comparison_text(c, {});
  EXPECT_NE(text.find("TFLOP/s"), std::string::npos) << text;
  EXPECT_NE(text.find("0.500x"), std::string::npos) << text;
}

}  // namespace
}  // namespace oomlab::report
