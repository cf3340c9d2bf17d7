// oomlab compare A B: two result sets side by side (harness/report/comparison.hpp); exit 1 on a
// regression beyond the threshold, 0 otherwise, 2 on bad input.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/cli/commands.hpp"
#include "harness/memory/user_text.hpp"
#include "harness/report/comparison.hpp"
#include "harness/report/comparison_print.hpp"
#include "harness/report/input_error.hpp"
#include "harness/report/result_set.hpp"
#include "harness/runner/json_text.hpp"

namespace oomlab::cli {

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

}  // namespace oomlab::cli
