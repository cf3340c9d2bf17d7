// The one invariant (docs/architecture.md), as one contract over every registered scenario and
// variant: two backends make the same allocator events (everything but times and streams) and
// the same peaks. Like RMM's resource contract suite, it is written once and runs on whatever is
// registered, so a new scenario is under it without a line of test code.
#pragma once
#include <gtest/gtest.h>

#include <cctype>
#include <ostream>
#include <string>
#include <vector>

#include "harness/runner/scenario.hpp"
#include "harness/testing/run_scenario.hpp"

namespace oomlab::testing {

struct ContractCase {
  std::string scenario, variant;
};
inline void PrintTo(const ContractCase& c, std::ostream* out) { *out << c.scenario << "/" << c.variant; }

// Every registered scenario x variant.
inline std::vector<ContractCase> every_variant() {
  std::vector<ContractCase> cases;
  for (const Scenario* scenario : ScenarioRegistry::instance().all()) {
    for (const VariantSpec& variant : scenario->variants()) cases.push_back({scenario->name(), variant.name});
  }
  return cases;
}

struct ContractCaseName {
  template <class Info>
  std::string operator()(const Info& info) const {
    std::string name = info.param.scenario + "_" + info.param.variant;
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    return name;
  }
};

// Runs the case on `device` and on dry at `scale` and compares them; skips (saying why) a variant
// this device cannot run.
inline void expect_same_allocations_as_dry(const ContractCase& c, DeviceKind device, Scale scale) {
  const Scenario* scenario = ScenarioRegistry::instance().find(c.scenario);
  ASSERT_NE(scenario, nullptr);
  for (const VariantSpec& variant : scenario->variants()) {
    if (variant.name == c.variant && variant.expected == Expect::error) {
      GTEST_SKIP() << "the story ends in an error before it is done allocating (the scenario's own tests check it)";
    }
  }
  try {
    const KnobValues knobs =
        resolve_knobs(c.scenario, scenario->knobs(), scenario->variant_knobs(c.variant, scale), {});
    scenario->check_device(c.variant, scale, device, knobs);
  } catch (const NotOnThisDevice& why) {
    GTEST_SKIP() << why.what();
  }
  const ScenarioOutcome ran = run_scenario(c.scenario, c.variant, device, scale);
  const ScenarioOutcome dry = run_scenario(c.scenario, c.variant, DeviceKind::dry, scale);
  ASSERT_EQ(ran.events.size(), dry.events.size());
  for (std::size_t i = 0; i < ran.events.size(); ++i) {
    ASSERT_TRUE(ran.events[i].same_as(dry.events[i])) << "event " << i;
  }
  EXPECT_EQ(ran.stats.allocated.peak, dry.stats.allocated.peak);
  EXPECT_EQ(ran.stats.reserved.peak, dry.stats.reserved.peak);
  EXPECT_EQ(ran.oom.has_value(), dry.oom.has_value());
}

}  // namespace oomlab::testing
