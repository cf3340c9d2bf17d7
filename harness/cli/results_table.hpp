// The table run and suite print.
#pragma once
#include <cstdio>
#include <vector>

#include "harness/runner/run_record.hpp"

namespace oomlab::cli {

// story: the run tests each variant's story, so the table shows expected and match columns;
// question: the user's own settings, where the outcome is the answer.
enum class TableKind { story, question };

// One row per record (outcome, budget, need, peaks, throughput), then for every run that did
// not end ok its knobs, its shortfall and its message (diagnosis and remedy for an OOM).
void print_results_table(const std::vector<RunRecord>& records, std::FILE* out,
                         TableKind kind = TableKind::story);

// Each record's warnings, one "oomlab: warning: scenario/variant: ..." line each. Returns false
// when a file the user asked for (a trace) was not written.
bool print_warnings(const std::vector<RunRecord>& records, std::FILE* out);

}  // namespace oomlab::cli
