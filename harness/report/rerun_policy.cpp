#include "harness/report/rerun_policy.hpp"

#include <algorithm>

#include "harness/runner/scenario.hpp"

namespace oomlab::report {

std::string why_not_rerun(const RunRecord& record) {
  // A replay's record holds the snapshot's numbers, not its requests: only the snapshot replays.
  if (record.scenario == "replay" || record.scale == "snapshot") {
    return "a replay of a snapshot is not re-run; its timeline is the trace oomlab replay writes beside the record "
           "(oomlab replay SNAPSHOT --out NAME.json --trace NAME.trace.json)";
  }
  const Scenario* scenario = ScenarioRegistry::instance().find(record.scenario);
  if (!scenario) return "no scenario of that name in this oomlab";
  const auto variants = scenario->variants();
  if (std::none_of(variants.begin(), variants.end(), [&](const VariantSpec& v) { return v.name == record.variant; })) {
    return record.scenario + " has no variant of that name";
  }
  const auto scale = parse_scale(record.scale);
  if (!scale) return "unknown scale";
  const long most = static_cast<long>(kRerunStepsPerDefault) * std::max(1, scenario->default_steps(*scale));
  if (record.steps < 1 || record.steps > most) {
    return "the record says " + std::to_string(record.steps) + " steps; " + record.scenario + " runs 1 to " +
           std::to_string(most) + " at " + record.scale + " scale";
  }
  return "";
}

RerunBudget::RerunBudget(std::chrono::seconds total)
    : total_(total), deadline_(std::chrono::steady_clock::now() + total) {}

double RerunBudget::seconds_left() const {
  const auto left = std::chrono::duration<double>(deadline_ - std::chrono::steady_clock::now()).count();
  return std::max(0.0, left);
}

}  // namespace oomlab::report
