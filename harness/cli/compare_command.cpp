// oomlab compare A B: two result sets side by side (harness/report/comparison.hpp); exit 1 on a
// regression beyond the threshold, 0 otherwise, 2 on bad input.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "harness/cli/commands.hpp"
#include "harness/memory/user_text.hpp"
#include "harness/report/comparison.hpp"
#include "harness/report/comparison_print.hpp"
#include "harness/report/input_error.hpp"
#include "harness/report/result_set.hpp"
#include "harness/runner/json_text.hpp"

namespace oomlab::cli {

struct CompareOptions {
  std::string a, b;              // result sets: record files, folders, baselines, benchmark JSON
  std::string threshold = "2%";  // a relative change smaller than this is "same"
  std::string metrics;           // comma-separated; empty: outcome, peak, throughput, all counters
  bool json = false;             // the table's fields as JSON
  bool all = false;              // also the rows that are the same
};

namespace {

// "2%", "0.5%" or "2" (percent either way) -> 0.02.
double threshold_option(const std::string& text) {
  std::string number = text;
  if (!number.empty() && number.back() == '%') number.pop_back();
  char* end = nullptr;
  const double percent = number.empty() ? NAN : std::strtod(number.c_str(), &end);
  if (number.empty() || *end != '\0' || !std::isfinite(percent) || percent < 0) {
    throw UsageError("--threshold " + quote_user_text(text) + " is not a percentage (e.g. 2%, 0.5%)");
  }
  return percent / 100;
}

std::vector<std::string> metrics_option(const std::string& text) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name.empty()) throw UsageError("--metrics " + quote_user_text(text) + ": an empty name between commas");
    names.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

bool colour_wanted() { return ::isatty(::fileno(stdout)) && std::getenv("NO_COLOR") == nullptr; }

}  // namespace

int compare_command(const CompareOptions& options) {
  report::CompareOptions compare;
  compare.threshold = threshold_option(options.threshold);
  if (!options.metrics.empty()) compare.metrics = metrics_option(options.metrics);
  report::Comparison comparison;
  try {
    const report::ResultSet a = report::load_result_set(options.a);
    const report::ResultSet b = report::load_result_set(options.b);
    comparison = report::compare_result_sets(a, b, compare);
  } catch (const report::InputError& e) {
    throw UsageError(printable_text(e.what()));  // names and values from the files: one line
  }
  if (options.json) {
    // json_text: a file name that is not UTF-8 becomes U+FFFD instead of an exception.
    std::printf("%s\n", json_text(report::comparison_json(comparison), 2).c_str());
  } else {
    std::fputs(report::comparison_text(comparison, {options.all, colour_wanted()}).c_str(), stdout);
  }
  return comparison.regression() ? 1 : 0;
}

Command add_compare_command(CLI::App& app) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* compare = app.add_subcommand(
      "compare", "Compare two result sets (run records, suite folders, baselines or Google Benchmark "
                 "JSON; across commits or GPUs): outcome, peaks and throughput per variant, each "
                 "benchmark counter. Exit 0 if nothing got worse beyond the threshold (and the "
                 "noise of the step times), 1 on a regression, 2 on bad input");
  compare->add_option("A", options->a, "The reference: a file or folder")->required();
  compare->add_option("B", options->b, "The one compared with it: a file or folder")->required();
  compare->add_option("--threshold", options->threshold, "Relative change below which a row is the same (default 2%)");
  compare->add_option("--metrics", options->metrics,
                      "Comma-separated: outcome, peak, peak_allocated, peak_reserved, need, "
                      "peak_device_used, throughput, tags, replay (two replays' largest site, "
                      "iterations, leak, what-if fits), or benchmark counters (real_time, TFLOP/s, "
                      "...). Default: outcome, peak, throughput, replay and every counter");
  add_json_flag(*compare, options->json, "The same fields as JSON, every row");
  compare->add_flag("--all", options->all, "Also print the rows that are the same");
  return {compare, [options] { return compare_command(*options); }};
}

}  // namespace oomlab::cli
