// Two result sets side by side: the engine behind `oomlab compare`. Run records are matched by
// record_match.hpp and compared on outcome, peaks and throughput; Google Benchmark results by
// benchmark name, per counter. Each row gets a verdict:
//  - same:    within the threshold (and, for timings, within the measured noise of either side);
//  - better / worse: beyond both, in the metric's good / bad direction;
//  - changed: different, with no better or worse (an OOM moving to another step, a budget);
//  - differs: A and B are different devices (dry vs cuda) whose allocator-level numbers must
//             agree exactly, and do not.
// A comparison with a `worse` or `differs` row is a regression (oomlab compare exits 1).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/report/result_set.hpp"

namespace oomlab::report {

enum class Verdict { same, better, worse, changed, differs };
const char* verdict_name(Verdict verdict);

struct ComparisonRow {
  std::string item;     // "srgan_leak/broken", or a benchmark's name
  std::string setting;  // "cuda/small batch=24", or the benchmark's label / file
  std::string metric;   // "outcome", "peak_allocated", "throughput", "TFLOP/s", ...
  std::string unit;     // "bytes", "images/s", "ms", "" (unitless or text)
  std::optional<double> a, b;  // the numbers, when the metric is one
  std::string a_text, b_text;  // as printed, units included ("12.70GiB", "146.2 images/s ±1.9%")
  std::string delta_text;      // "+1.00MiB", "-6.1 images/s", "step 14 -> 20"
  std::optional<double> ratio; // b / a
  double noise_a = -1, noise_b = -1;  // relative; < 0 unknown or not applicable
  Verdict verdict = Verdict::same;
};

struct CompareOptions {
  double threshold = 0.02;           // relative change that counts (--threshold 2%)
  std::vector<std::string> metrics;  // empty: outcome, peak, throughput and every counter
};

struct Comparison {
  std::string a_source, b_source;
  std::string a_description, b_description;  // ResultSet::describe()
  double threshold = 0.02;
  std::vector<ComparisonRow> rows;
  struct Unmatched {
    std::string item;     // "gpt_train/bf16", or a benchmark's name
    std::string setting;  // "cuda/small", or the benchmark's file
  };
  std::vector<Unmatched> only_a, only_b;
  std::vector<std::string> notes;           // how things were matched, what was skipped

  std::size_t count(Verdict verdict) const;
  bool regression() const { return count(Verdict::worse) + count(Verdict::differs) > 0; }
};

// The metric names --metrics takes for run records: groups "outcome", "peak" (peak_allocated,
// peak_reserved, need and need_reserved, peak_device_used), "throughput", "tags" (per-tag peaks, off by default),
// "replay" (two replays' largest sites, iterations, leak, what-if fits, fidelity), or any single one of those. For
// benchmarks: a counter's name ("real_time", "TFLOP/s").
const std::vector<std::string>& record_metric_names();

// Throws InputError when the two sets hold different kinds of results, have nothing in common,
// or a --metrics name is unknown to both.
Comparison compare_result_sets(const ResultSet& a, const ResultSet& b, const CompareOptions& options);

}  // namespace oomlab::report
