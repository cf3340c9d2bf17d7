// The table of one scenario on `oomlab report`'s page, in nvbench_compare's layout: the variants
// (at each scale) as rows, the machines that ran them as columns, grouped by measure (outcome,
// peak allocated, peak reserved, throughput), so dry's prediction stands beside each GPU build's
// measurement of the same variant. A machine is dry (or host), or a GPU and the image its kernels
// ran from ("sm_90a", "compute_80 PTX (JIT)"): two builds on one card are two columns.
//
// One cell holds one record. Several records of one variant, scale and machine (a suite's dry
// runs, repeated by a second build's suite) make one row, not several: the first is shown and a
// note under the table says how many there were and whether their peaks agree.
#pragma once
#include <string>
#include <vector>

#include "harness/report/result_set.hpp"

namespace oomlab::report {

// "NVIDIA H200 (sm_90a)" for a GPU (with its image), else the device kind ("dry").
std::string machine_name(const RunRecord& record);

// The Markdown table (and its notes) of `records`, all of one scenario, in the order loaded.
std::string scenario_table(const std::vector<const LoadedRecord*>& records);

}  // namespace oomlab::report
