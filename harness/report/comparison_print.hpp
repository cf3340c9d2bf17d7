// How `oomlab compare` shows a comparison: one aligned table with units on every number and the
// ratio beside the raw values, what only one side has, then a one-line verdict last (hyperfine
// and nvbench_compare style); or JSON with the same fields for machines.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "harness/report/comparison.hpp"

namespace oomlab::report {

struct PrintOptions {
  bool all_rows = false;  // also the rows that are the same
  bool colour = false;    // ANSI colour on the verdicts (a terminal only)
};

std::string comparison_text(const Comparison& comparison, const PrintOptions& options);
// "regression: 1 worse (srgan_leak/broken throughput 0.958x), 40 same; threshold 2%".
std::string verdict_line(const Comparison& comparison);
// Every row, the same ones included.
nlohmann::ordered_json comparison_json(const Comparison& comparison);

}  // namespace oomlab::report
