// What the report may re-run on dry for a record's timeline. A record is input, and a re-run
// costs what the record claims: `"steps": 2000000000` ran for the whole 600 s timeout, and N such
// records N times that. So a record is re-run only with settings a run of that scenario can
// honestly have, and all re-runs of one report share one time budget.
#pragma once
#include <chrono>
#include <string>

#include "harness/runner/run_record.hpp"

namespace oomlab::report {

// A re-run may take up to this many times the scenario's default steps at the record's scale
// (Scenario::default_steps; a scenario declares no maximum): room for `oomlab run --steps`
// beyond the default without letting a record buy hours.
constexpr int kRerunStepsPerDefault = 8;

// Empty when `record` can be re-run: its scenario and variant are registered, its scale is known
// and its steps are from 1 to kRerunStepsPerDefault x the default. Else why not, for the page:
// "the record says 2000000000 steps; srgan_leak runs 1 to 96 at tiny scale".
std::string why_not_rerun(const RunRecord& record);

// The time all of one report's re-runs share; each gets what is left of it as its timeout.
class RerunBudget {
 public:
  explicit RerunBudget(std::chrono::seconds total);
  // Seconds left (0 when spent).
  double seconds_left() const;
  std::chrono::seconds total() const { return total_; }

 private:
  std::chrono::seconds total_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace oomlab::report
