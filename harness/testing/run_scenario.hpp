// Runs one scenario variant in this process on a fresh device, with the scenario's own budget
// and settings, and reports what happened: the trace and, on OOM, the error's numbers.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/memory/budget.hpp"
#include "harness/memory/oom_error.hpp"
#include "harness/memory/trace.hpp"
#include "harness/runner/run_context.hpp"
#include "harness/runner/runner.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab::testing {

struct ScenarioOutcome {
  std::optional<memory::OomInfo> oom;  // set when the variant ran out of memory
  std::vector<memory::TraceEvent> events;
  memory::MemoryStats stats;
  std::map<std::string, double> metrics;
};

// `budget`: a size or GPU profile instead of the scenario's own (empty: the story's); `steps`:
// instead of the scenario's default (0).
inline ScenarioOutcome run_scenario(const std::string& scenario_name, const std::string& variant,
                                    DeviceKind kind, Scale scale, const std::string& budget = "", int steps = 0) {
  const Scenario* scenario = ScenarioRegistry::instance().find(scenario_name);
  if (scenario == nullptr) throw std::invalid_argument("no scenario " + scenario_name);
  memory::AllocatorConfig config;
  config.budget = memory::parse_budget(budget.empty() ? scenario->budget(scale) : budget).bytes;
  scenario->configure(variant, scale, config);
  Device device(kind, config);
  ScenarioOutcome outcome;
  {
    RunContext context(device, scale, steps > 0 ? steps : scenario->default_steps(scale));
    try {
      scenario->run(variant, context);
    } catch (const memory::OomError& error) {
      outcome.oom = error.info();
    }
    outcome.metrics = context.metrics();
  }
  const auto& events = device.allocator().trace().events();
  outcome.events.assign(events.begin(), events.end());
  outcome.stats = device.allocator().stats();
  return outcome;
}

// The variant ran out of memory, diagnosed as `diagnosis`.
inline ::testing::AssertionResult ran_out_with(const ScenarioOutcome& outcome, memory::Diagnosis diagnosis) {
  if (!outcome.oom) return ::testing::AssertionFailure() << "no OOM: the variant fit";
  if (outcome.oom->diagnosis != diagnosis) {
    return ::testing::AssertionFailure() << "an OOM diagnosed " << memory::diagnosis_name(outcome.oom->diagnosis)
                                         << ", not " << memory::diagnosis_name(diagnosis);
  }
  return ::testing::AssertionSuccess();
}

// Runs each variant and expects it to fit: no OOM, not even one the allocator recovered from.
// The outcomes by variant, for more checks.
inline std::map<std::string, ScenarioOutcome> expect_variants_fit(const std::string& scenario_name,
                                                                  const std::vector<std::string>& variants,
                                                                  DeviceKind kind, Scale scale) {
  std::map<std::string, ScenarioOutcome> outcomes;
  for (const std::string& variant : variants) {
    ScenarioOutcome outcome = run_scenario(scenario_name, variant, kind, scale);
    EXPECT_FALSE(outcome.oom.has_value()) << variant << " must fit";
    EXPECT_EQ(outcome.stats.num_ooms, 0u) << variant;
    outcomes.emplace(variant, std::move(outcome));
  }
  return outcomes;
}

// A request for run_variant_in_process in a test: quiet (no progress line, no notes) and without
// the planned need (a second run on dry).
inline RunRequest quiet_request(const std::string& scenario_name, const std::string& variant, DeviceKind kind,
                                Scale scale, const std::string& budget = "", KnobSettings set = {}) {
  RunRequest request;
  request.scenario = scenario_name;
  request.variant = variant;
  request.device = kind;
  request.scale = scale;
  request.budget = budget;
  request.set = std::move(set);
  request.progress = false;
  request.quiet = true;
  request.plan_need = false;
  return request;
}

}  // namespace oomlab::testing
