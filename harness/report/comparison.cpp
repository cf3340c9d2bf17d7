#include "harness/report/comparison.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "harness/report/comparison_rows.hpp"
#include "harness/report/input_error.hpp"

namespace oomlab::report {

namespace {

const std::vector<std::string> kPeakGroup = {"peak_allocated", "peak_reserved", "need", "peak_device_used"};

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

detail::MetricSelection select_metrics(const ResultSet& a, const ResultSet& b, const CompareOptions& options) {
  detail::MetricSelection selection;
  if (options.metrics.empty()) {
    selection.names = {"outcome", "throughput", "replay"};
    selection.names.insert(kPeakGroup.begin(), kPeakGroup.end());
    return selection;
  }
  std::vector<std::string> counters;
  for (const ResultSet* set : {&a, &b}) {
    for (const BenchmarkResult& result : set->benchmarks) {
      for (const BenchmarkCounter& counter : result.counters) {
        if (std::find(counters.begin(), counters.end(), counter.name) == counters.end())
          counters.push_back(counter.name);
      }
    }
  }
  const auto& record_names = record_metric_names();
  for (const std::string& name : options.metrics) {
    if (name == "peak") {
      selection.names.insert(kPeakGroup.begin(), kPeakGroup.end());
    } else if (std::find(record_names.begin(), record_names.end(), name) != record_names.end()) {
      selection.names.insert(name);
    } else if (std::find(counters.begin(), counters.end(), name) != counters.end()) {
      selection.names.insert(name);
      selection.all_counters = false;
    } else {
      std::vector<std::string> valid = record_names;
      valid.insert(valid.end(), counters.begin(), counters.end());
      throw InputError("--metrics: unknown metric '" + name + "'; valid: " + join(valid));
    }
  }
  return selection;
}

// Unmatched records by name and setting; where several share both, their files tell them apart.
std::vector<Comparison::Unmatched> unmatched(const std::vector<const LoadedRecord*>& records) {
  std::vector<std::pair<std::string, std::string>> named;  // (name, setting), in order
  std::map<std::pair<std::string, std::string>, std::size_t> count;  // counted once: linear, not n^2
  for (const LoadedRecord* r : records) {
    named.emplace_back(record_name(r->record), record_setting(r->record));
    ++count[named.back()];
  }
  std::vector<Comparison::Unmatched> list;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& [name, setting] = named[i];
    list.push_back({count[named[i]] > 1 ? name + " [" + records[i]->file + "]" : name, setting});
  }
  return list;
}

}  // namespace

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::same: return "same";
    case Verdict::better: return "better";
    case Verdict::worse: return "worse";
    case Verdict::changed: return "changed";
    case Verdict::differs: return "differs";
  }
  return "?";
}

std::size_t Comparison::count(Verdict verdict) const {
  return static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [&](const ComparisonRow& row) { return row.verdict == verdict; }));
}

const std::vector<std::string>& record_metric_names() {
  static const std::vector<std::string> names = {"outcome", "peak", "peak_allocated", "peak_reserved", "need",
                                                 "peak_device_used", "throughput", "tags", "replay"};
  return names;
}

namespace detail {

Verdict judge(double a, double b, Better better, double threshold, double noise_a, double noise_b) {
  if (a == b) return Verdict::same;
  const double limit = std::max({threshold, noise_a, noise_b});
  const double change = a != 0 ? (b - a) / std::fabs(a) : (b > a ? INFINITY : -INFINITY);
  if (std::fabs(change) <= limit) return Verdict::same;
  if (better == Better::unknown) return Verdict::changed;
  const bool up_is_good = better == Better::higher;
  return (change > 0) == up_is_good ? Verdict::better : Verdict::worse;
}

}  // namespace detail

Comparison compare_result_sets(const ResultSet& a, const ResultSet& b, const CompareOptions& options) {
  const bool records = !a.records.empty() && !b.records.empty();
  const bool benchmarks = !a.benchmarks.empty() && !b.benchmarks.empty();
  if (!records && !benchmarks) {
    throw InputError("nothing to compare: " + a.source + " holds " + a.describe() + ", " + b.source + " holds " +
                     b.describe());
  }
  if (!(options.threshold >= 0) || !std::isfinite(options.threshold)) {
    throw InputError("--threshold must be a percentage >= 0");
  }
  const detail::MetricSelection metrics = select_metrics(a, b, options);
  Comparison comparison;
  comparison.a_source = a.source;
  comparison.b_source = b.source;
  comparison.a_description = a.describe();
  comparison.b_description = b.describe();
  comparison.threshold = options.threshold;
  for (const std::string& note : a.notes) comparison.notes.push_back("A: " + note);
  for (const std::string& note : b.notes) comparison.notes.push_back("B: " + note);

  std::size_t paired = 0;
  if (records) {
    const RecordMatch match = match_records(a.records, b.records);
    if (match.across_devices) {
      comparison.notes.push_back("records of different devices were matched (setting \"... vs <device>\"): their "
                                 "allocator-level peaks must agree exactly; throughput and device-level memory are "
                                 "not compared");
    }
    detail::add_record_rows(match, metrics, options.threshold, comparison);
    comparison.only_a = unmatched(match.only_a);
    comparison.only_b = unmatched(match.only_b);
    paired += match.pairs.size();
  }
  if (benchmarks)
    paired += detail::add_benchmark_rows(a.benchmarks, b.benchmarks, metrics, options.threshold, comparison);
  if (paired == 0) {
    throw InputError("nothing in common: no scenario/variant/device/scale (or benchmark name) of " + a.source +
                     " is in " + b.source + " (" + a.describe() + " vs " + b.describe() + ")");
  }
  return comparison;
}

}  // namespace oomlab::report
