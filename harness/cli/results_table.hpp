// The table run and suite print: one row per record, then the message of each failed run.
#pragma once
#include <cstdio>
#include <vector>

#include "harness/runner/run_record.hpp"

namespace oomlab::cli {

void print_results_table(const std::vector<RunRecord>& records, std::FILE* out);

// Each record's warnings, one "oomlab: warning: scenario/variant: ..." line each. Returns false
// when a file the user asked for (a trace) was not written.
bool print_warnings(const std::vector<RunRecord>& records, std::FILE* out);

}  // namespace oomlab::cli
