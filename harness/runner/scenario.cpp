// Scales and the scenario registry.
#include "harness/runner/scenario.hpp"

#include <algorithm>
#include <stdexcept>

#include "harness/runner/run_context.hpp"

namespace oomlab {

KnobValues Scenario::knobs_of(const std::string& variant, const RunContext& context) const {
  if (!context.knobs().all().empty()) return context.knobs();
  return resolve_knobs(name(), knobs(), variant_knobs(variant, context.scale()), {});
}

const char* expect_name(Expect expect) {
  switch (expect) {
    case Expect::ok: return "ok";
    case Expect::oom: return "oom";
    case Expect::error: return "error";
  }
  return "?";
}

const char* scale_name(Scale scale) {
  switch (scale) {
    case Scale::tiny: return "tiny";
    case Scale::small: return "small";
    case Scale::full: return "full";
  }
  return "unknown";
}

std::optional<Scale> parse_scale(std::string_view name) {
  for (Scale scale : {Scale::tiny, Scale::small, Scale::full}) {
    if (name == scale_name(scale)) return scale;
  }
  return std::nullopt;
}

ScenarioRegistry& ScenarioRegistry::instance() {
  static ScenarioRegistry registry;
  return registry;
}

void ScenarioRegistry::add(std::unique_ptr<Scenario> scenario) {
  // Registration runs during static initialisation: a mistake here is a programming error
  // that must show at once, not a scenario silently shadowing another.
  if (!scenario) throw std::logic_error("ScenarioRegistry::add: null scenario");
  if (find(scenario->name())) {
    throw std::logic_error("ScenarioRegistry::add: scenario '" + scenario->name() +
                           "' is registered twice");
  }
  scenarios_.push_back(std::move(scenario));
}

const Scenario* ScenarioRegistry::find(std::string_view name) const {
  for (const auto& scenario : scenarios_) {
    if (scenario->name() == name) return scenario.get();
  }
  return nullptr;
}

std::vector<const Scenario*> ScenarioRegistry::all() const {
  std::vector<const Scenario*> sorted;
  for (const auto& scenario : scenarios_) sorted.push_back(scenario.get());
  std::sort(sorted.begin(), sorted.end(),
            [](const Scenario* a, const Scenario* b) { return a->name() < b->name(); });
  return sorted;
}

}  // namespace oomlab
