// How much a record's throughput moves by itself: the relative standard deviation of its steady
// step times (the steps after the warm-up), nvbench's "noise". A change in throughput smaller
// than the noise of either side is not called better or worse.
#pragma once
#include <cstddef>
#include <string>

#include "harness/runner/run_record.hpp"

namespace oomlab::report {

struct StepNoise {
  double relative = -1;   // stddev / mean of the steady step times; < 0: unknown (< 2 steps)
  std::size_t steps = 0;  // how many steps it is taken over
};

StepNoise step_noise(const RunRecord& record);

// "146.2 images/s ±1.9%" (the noise when known); "-" when the record has no throughput.
std::string throughput_text(const RunRecord& record);

}  // namespace oomlab::report
