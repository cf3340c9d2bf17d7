// bisect: the boundary of "it fits". Without a knob, the smallest budget at which a variant
// runs (to 1 MiB); with a knob (batch, seq, micro_batches, ...), the largest value that fits the
// budget — Lightning's batch-size finder, without a GPU when run on dry. Every probe is a real
// run of the variant (in this process: on dry a full-scale run takes milliseconds).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/runner/runner.hpp"

namespace oomlab::advise {

struct Probe {
  std::string setting;    // "budget 23.55GiB" or "batch=24"
  bool fits = false;
  std::size_t need = 0;   // peak allocated of the probe (0 when it did not fit)
};

struct BudgetBisection {
  std::size_t smallest_fitting = 0;  // bytes; the variant runs with this budget
  std::size_t largest_failing = 0;   // bytes; 0 when even the lower bound fits
  std::size_t need = 0;              // peak live bytes without a cap (the lower bound)
  std::size_t need_reserved = 0;     // reserved peak without a cap (always fits)
  std::vector<Probe> probes;
};

// Searches [need, need_reserved] (a cap below the live bytes cannot hold them; at the uncapped
// run's reserved peak the cap is never reached). `base` is the run to search (its budget is
// ignored). Throws std::runtime_error when a probe fails for another reason than memory.
BudgetBisection bisect_budget(RunRequest base, std::size_t resolution = std::size_t{1} << 20);

struct KnobBisection {
  std::string knob;
  std::int64_t start = 0;     // the variant's (or --set) value
  // Whether the run needs less memory as the knob grows (micro_batches, gpus when sharded): then
  // the answer is the smallest value that fits, else the largest.
  bool more_needs_less = false;
  std::int64_t fitting = 0;   // the answer; 0: no value the scenario accepts fits
  std::int64_t failing = 0;   // the accepted value next to it, past the answer, that does not fit;
                              // 0: every accepted value on that side fits
  std::int64_t step = 1;      // values searched are multiples of this
  std::vector<Probe> probes;
};

// The value of the integer knob `knob` nearest the run's limit that fits base's budget, other
// settings as given: the largest where more of the knob needs more memory (batch, seq), the
// smallest where it needs less (micro_batches, gpus); the direction is measured by two uncapped
// runs. Only values the scenario accepts are tried (a batch a multiple of micro_batches,
// micro_batches a divisor of the batch, ...). Throws std::invalid_argument for an unknown or
// non-integer knob, or an unlimited budget (every value fits: nothing to search).
KnobBisection bisect_knob(RunRequest base, const std::string& knob);

}  // namespace oomlab::advise
