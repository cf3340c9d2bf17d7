// The regression check: fresh records against the committed baselines of their device and scale,
// every deterministic field exactly (record_fields.hpp). Records of another device than the
// baselines' (a GPU's cuda/small records against dry/small baselines) are checked on the fields
// the allocator decides, which dry predicts exactly.
#pragma once
#include <string>
#include <vector>

#include "harness/report/result_set.hpp"

namespace oomlab::report {

struct BaselineCheck {
  std::size_t compared = 0;           // records checked against a baseline
  std::vector<std::string> failures;  // one line each, "srgan_leak/broken: oom step 14 -> 20; ..."
  bool passed() const { return failures.empty(); }
};

// Throws InputError when the baseline folder cannot be read.
BaselineCheck check_against_baselines(const std::string& baseline_folder, const std::vector<LoadedRecord>& records);

}  // namespace oomlab::report
