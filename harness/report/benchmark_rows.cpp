// Rows for matched Google Benchmark results: one per counter both sides have.
#include <filesystem>
#include <map>

#include "harness/report/comparison_rows.hpp"
#include "harness/report/number_format.hpp"

namespace oomlab::report::detail {

namespace {

std::string value_text(const BenchmarkCounter& counter) {
  std::string text = format_number(counter.value);
  if (!counter.unit.empty()) text += " " + counter.unit;
  if (counter.noise >= 0) text += " \xC2\xB1" + format_number(100 * counter.noise, 2) + "%";
  return text;
}

std::string file_name(const BenchmarkResult& result) {
  return std::filesystem::path(result.file).filename().string();
}

void add_rows(const BenchmarkResult& a, const BenchmarkResult& b, const MetricSelection& metrics, double threshold,
              Comparison& comparison) {
  for (const BenchmarkCounter& ca : a.counters) {
    if (!metrics.all_counters && !metrics.wants(ca.name)) continue;
    const BenchmarkCounter* cb = nullptr;
    for (const BenchmarkCounter& candidate : b.counters) {
      if (candidate.name == ca.name) cb = &candidate;
    }
    if (!cb) continue;
    ComparisonRow row;
    row.item = a.name;
    row.setting = a.label.empty() ? file_name(a) : a.label;
    row.metric = ca.name;
    row.unit = ca.unit;
    row.a = ca.value;
    row.b = cb->value;
    row.a_text = value_text(ca);
    row.b_text = value_text(*cb);
    row.noise_a = ca.noise;
    row.noise_b = cb->noise;
    // A time in another unit (ms vs us) is not the same number: say so rather than divide.
    if (ca.unit != cb->unit) {
      row.verdict = Verdict::changed;
    } else {
      if (ca.value != 0) row.ratio = cb->value / ca.value;
      row.delta_text = (cb->value >= ca.value ? "+" : "") + format_number(cb->value - ca.value) +
                       (ca.unit.empty() ? "" : " " + ca.unit);
      row.verdict = judge(ca.value, cb->value, ca.better, threshold, ca.noise, cb->noise);
    }
    comparison.rows.push_back(std::move(row));
  }
}

}  // namespace

std::size_t add_benchmark_rows(const std::vector<BenchmarkResult>& a, const std::vector<BenchmarkResult>& b,
                               const MetricSelection& metrics, double threshold, Comparison& comparison) {
  // A name that repeats in a set (two files with the same benchmark) is told apart by its file.
  std::map<std::string, int> count_a, count_b;
  for (const BenchmarkResult& r : a) ++count_a[r.name];
  for (const BenchmarkResult& r : b) ++count_b[r.name];
  const auto key = [&](const BenchmarkResult& r) {
    return count_a[r.name] > 1 || count_b[r.name] > 1 ? file_name(r) + ":" + r.name : r.name;
  };
  std::map<std::string, const BenchmarkResult*> by_key_b;
  for (const BenchmarkResult& r : b) by_key_b.emplace(key(r), &r);
  std::size_t paired = 0;
  for (const BenchmarkResult& r : a) {
    auto it = by_key_b.find(key(r));
    if (it == by_key_b.end()) {
      comparison.only_a.push_back({r.name, r.file});
      continue;
    }
    add_rows(r, *it->second, metrics, threshold, comparison);
    by_key_b.erase(it);
    ++paired;
  }
  for (const BenchmarkResult& r : b) {
    if (by_key_b.count(key(r)) && by_key_b[key(r)] == &r) comparison.only_b.push_back({r.name, r.file});
  }
  return paired;
}

}  // namespace oomlab::report::detail
