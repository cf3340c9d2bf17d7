// oomlab list: every scenario with its budgets and steps per scale and each variant's story.
#include <cstdio>
#include <string>

#include "harness/cli/commands.hpp"
#include "harness/memory/budget.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab::cli {

namespace {

std::string describe_budget(const std::string& text) {
  try {
    return memory::parse_budget(text).describe();
  } catch (const std::exception&) {
    return text + " (invalid)";  // a scenario bug; `run` reports it in full
  }
}

}  // namespace

int list_command() {
  auto scenarios = ScenarioRegistry::instance().all();
  if (scenarios.empty()) {
    std::printf("no scenarios registered\n");
    return 0;
  }
  for (const Scenario* scenario : scenarios) {
    std::printf("%s  %s\n", scenario->name().c_str(), scenario->summary().c_str());
    for (Scale scale : {Scale::tiny, Scale::small, Scale::full}) {
      std::printf("  %-5s  budget %-28s  %d steps\n", scale_name(scale),
                  describe_budget(scenario->budget(scale)).c_str(),
                  scenario->default_steps(scale));
    }
    for (const VariantSpec& variant : scenario->variants()) {
      std::printf("    %-22s expect %-5s  %s\n", variant.name.c_str(),
                  expect_name(variant.expected), variant.description.c_str());
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace oomlab::cli
