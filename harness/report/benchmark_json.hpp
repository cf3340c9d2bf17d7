// Google Benchmark JSON (--benchmark_out_format=json) read as one result per benchmark, each
// with its counters: real_time (and cpu_time for benchmarks not timed manually) plus every
// user counter (TFLOP/s, GB/s, peak_bytes, ...). With repetitions the value is the mean and the
// noise the relative standard deviation of the repetitions, as nvbench_compare uses it.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace oomlab::report {

// Which way is better for a counter, from its name: time and bytes lower, rates and ratios to a
// library higher; unknown names are shown but never called better or worse.
enum class Better { lower, higher, unknown };
Better counter_direction(std::string_view name);

struct BenchmarkCounter {
  std::string name;  // "real_time", "TFLOP/s", "peak_bytes"
  std::string unit;  // "ms" for the times; empty when the name carries it
  double value = 0;
  double noise = -1;  // relative standard deviation of the repetitions; < 0: unknown (one run)
  Better better = Better::unknown;
};

struct BenchmarkResult {
  std::string file;   // the JSON file it came from, relative to the result set's root
  std::string name;   // run_name, "BM_conv2d_ours/problem:0/dtype:0/pass:0/manual_time"
  std::string label;  // the benchmark's label, "B4 64->64 3x3 256x256 bf16 forward"; may be empty
  std::vector<BenchmarkCounter> counters;
};

// True for an object with a "benchmarks" array (and a "context" object).
bool is_benchmark_json(const nlohmann::ordered_json& json);
// The GPU or host the file names in its context ("NVIDIA H200"), empty when none.
std::string benchmark_device(const nlohmann::ordered_json& json);
// Throws InputError naming `file` when an entry is malformed.
std::vector<BenchmarkResult> read_benchmarks(const nlohmann::ordered_json& json, const std::string& file);

}  // namespace oomlab::report
