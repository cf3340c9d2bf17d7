#include "harness/report/benchmark_json.hpp"

#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "harness/report/input_error.hpp"

namespace oomlab::report {

namespace {

using Json = nlohmann::ordered_json;

bool contains(std::string_view text, std::string_view word) { return text.find(word) != std::string_view::npos; }

// Fields Google Benchmark writes for every entry: never user counters.
const std::set<std::string>& standard_fields() {
  static const std::set<std::string> fields = {
      "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
      "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit", "label",
      "aggregate_name", "aggregate_unit", "error_occurred", "error_message", "big_o", "rms",
      "skipped", "skip_message"};
  return fields;
}

// The numbers of one entry: the times and every numeric user counter, in the file's order.
std::vector<std::pair<std::string, double>> entry_values(const Json& entry) {
  std::vector<std::pair<std::string, double>> values;
  const std::string name = entry.value("run_name", entry.value("name", std::string()));
  if (entry.contains("real_time") && entry["real_time"].is_number()) {
    values.emplace_back("real_time", entry["real_time"].get<double>());
  }
  // A manually timed (GPU) benchmark's cpu_time is the host's launch loop: not a result.
  if (!contains(name, "manual_time") && entry.contains("cpu_time") && entry["cpu_time"].is_number()) {
    values.emplace_back("cpu_time", entry["cpu_time"].get<double>());
  }
  for (const auto& [key, value] : entry.items()) {
    if (value.is_number() && !standard_fields().count(key)) values.emplace_back(key, value.get<double>());
  }
  return values;
}

struct Accumulated {
  std::string label;
  std::string time_unit;
  std::vector<std::vector<std::pair<std::string, double>>> repetitions;  // iteration entries
  std::map<std::string, std::vector<std::pair<std::string, double>>> aggregates;  // by name
};

BenchmarkCounter make_counter(const std::string& name, const std::string& time_unit) {
  BenchmarkCounter counter;
  counter.name = name;
  counter.better = counter_direction(name);
  if (name == "real_time" || name == "cpu_time") counter.unit = time_unit;
  return counter;
}

// Mean and relative standard deviation of each counter over the repetitions.
std::vector<BenchmarkCounter> from_repetitions(const Accumulated& acc) {
  std::vector<BenchmarkCounter> counters;
  const auto& first = acc.repetitions.front();
  for (std::size_t c = 0; c < first.size(); ++c) {
    std::vector<double> values;
    for (const auto& repetition : acc.repetitions) {
      if (c < repetition.size() && repetition[c].first == first[c].first) values.push_back(repetition[c].second);
    }
    BenchmarkCounter counter = make_counter(first[c].first, acc.time_unit);
    double sum = 0;
    for (double v : values) sum += v;
    counter.value = sum / static_cast<double>(values.size());
    if (values.size() >= 2 && counter.value != 0) {
      double squares = 0;
      for (double v : values) squares += (v - counter.value) * (v - counter.value);
      counter.noise = std::sqrt(squares / static_cast<double>(values.size() - 1)) / std::fabs(counter.value);
    }
    counters.push_back(counter);
  }
  return counters;
}

// When the file holds only aggregates (--benchmark_report_aggregates_only): mean and stddev.
std::vector<BenchmarkCounter> from_aggregates(const Accumulated& acc) {
  std::vector<BenchmarkCounter> counters;
  auto mean = acc.aggregates.find("mean");
  if (mean == acc.aggregates.end()) mean = acc.aggregates.find("median");
  if (mean == acc.aggregates.end()) return counters;
  std::map<std::string, double> stddev;
  if (auto it = acc.aggregates.find("stddev"); it != acc.aggregates.end()) {
    for (const auto& [name, value] : it->second) stddev[name] = value;
  }
  for (const auto& [name, value] : mean->second) {
    BenchmarkCounter counter = make_counter(name, acc.time_unit);
    counter.value = value;
    if (auto it = stddev.find(name); it != stddev.end() && value != 0) counter.noise = it->second / std::fabs(value);
    counters.push_back(counter);
  }
  return counters;
}

}  // namespace

Better counter_direction(std::string_view name) {
  // Rates and ratios first: "bytes_per_second" is a rate, not a size.
  for (std::string_view word : {"/s", "per_s", "TFLOP", "FLOP", "ratio", "speedup", "throughput"}) {
    if (contains(name, word)) return Better::higher;
  }
  if (name.rfind("vs_", 0) == 0) return Better::higher;
  for (std::string_view word : {"time", "_ms", "ms.", "_ns", "ns_", "_us", "second", "latency", "peak",
                                "bytes", "_GB", "MiB", "wait"}) {
    if (contains(name, word)) return Better::lower;
  }
  return Better::unknown;
}

bool is_benchmark_json(const Json& json) {
  return json.is_object() && json.contains("benchmarks") && json["benchmarks"].is_array();
}

std::string benchmark_device(const Json& json) {
  if (!json.contains("context") || !json["context"].is_object()) return "";
  const Json& context = json["context"];
  for (const char* key : {"gpu", "device", "host_name"}) {
    if (context.contains(key) && context[key].is_string()) return context[key].get<std::string>();
  }
  return "";
}

std::vector<BenchmarkResult> read_benchmarks(const Json& json, const std::string& file) {
  std::vector<std::string> order;
  std::map<std::string, Accumulated> by_name;
  for (const Json& entry : json.at("benchmarks")) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) {
      throw InputError(file + ": a benchmark entry has no name (not Google Benchmark JSON?)");
    }
    if (entry.value("error_occurred", false) || entry.value("skipped", false)) continue;
    const std::string name = entry.value("run_name", entry["name"].get<std::string>());
    if (!by_name.count(name)) order.push_back(name);
    Accumulated& acc = by_name[name];
    if (entry.contains("label") && entry["label"].is_string()) acc.label = entry["label"].get<std::string>();
    acc.time_unit = entry.value("time_unit", std::string("ns"));
    if (entry.value("run_type", std::string("iteration")) == "aggregate") {
      acc.aggregates[entry.value("aggregate_name", std::string())] = entry_values(entry);
    } else {
      acc.repetitions.push_back(entry_values(entry));
    }
  }
  std::vector<BenchmarkResult> results;
  for (const std::string& name : order) {
    const Accumulated& acc = by_name[name];
    BenchmarkResult result;
    result.file = file;
    result.name = name;
    result.label = acc.label;
    result.counters = acc.repetitions.empty() ? from_aggregates(acc) : from_repetitions(acc);
    if (!result.counters.empty()) results.push_back(std::move(result));
  }
  return results;
}

}  // namespace oomlab::report
