// The table run and suite print: one row per record, then the message of each failed run.
#pragma once
#include <cstdio>
#include <vector>

#include "harness/runner/run_record.hpp"

namespace oomlab::cli {

void print_results_table(const std::vector<RunRecord>& records, std::FILE* out);

}  // namespace oomlab::cli
