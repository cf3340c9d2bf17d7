// Inside compare_result_sets: the rows of matched records and of matched benchmarks, and the
// one rule that turns two numbers into a verdict.
#pragma once
#include <set>
#include <string>

#include "harness/report/benchmark_json.hpp"
#include "harness/report/comparison.hpp"
#include "harness/report/record_match.hpp"

namespace oomlab::report::detail {

// The metrics asked for, groups expanded ("peak" -> its four); `all_counters` when no benchmark
// counter was named (every counter is compared then).
struct MetricSelection {
  std::set<std::string> names;
  bool all_counters = true;
  bool wants(const std::string& name) const { return names.count(name) != 0; }
};

// same within max(threshold, noise of either side); else better/worse by `better`, or changed
// when the direction is unknown. A change from or to 0 is beyond any threshold.
Verdict judge(double a, double b, Better better, double threshold, double noise_a, double noise_b);

// A row of `item` (scenario/variant) at `setting` for `metric`, its values still to fill.
inline ComparisonRow start_row(const std::string& item, const std::string& setting, const std::string& metric,
                               const std::string& unit) {
  ComparisonRow row;
  row.item = item;
  row.setting = setting;
  row.metric = metric;
  row.unit = unit;
  return row;
}

void add_record_rows(const RecordMatch& match, const MetricSelection& metrics, double threshold,
                     Comparison& comparison);

// Two replays' own rows (replay_rows.cpp): the largest sites, iterations, leak, what-if fits, fidelity.
void add_replay_rows(const RunRecord& a, const RunRecord& b, const std::string& item, const std::string& setting,
                     double threshold, Comparison& comparison);

// Pairs benchmarks by name (by file too where a name repeats) and adds a row per counter.
// Returns how many benchmarks were paired.
std::size_t add_benchmark_rows(const std::vector<BenchmarkResult>& a, const std::vector<BenchmarkResult>& b,
                               const MetricSelection& metrics, double threshold, Comparison& comparison);

}  // namespace oomlab::report::detail
