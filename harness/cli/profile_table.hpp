// `oomlab run --profile`: each variant's profiled ranges, largest device time first.
#pragma once
#include <cstdio>
#include <vector>

#include "harness/runner/run_record.hpp"

namespace oomlab::cli {

// Prints the "profile_ms.<range>" metrics of every record that has them, with each range's share
// of the run's step time after the warm-up steps (the profiler was reset when they ended).
// Ranges nest (a parent includes its children), so shares can sum past 100 %.
void print_profiles(const std::vector<RunRecord>& records, std::FILE* out);

}  // namespace oomlab::cli
