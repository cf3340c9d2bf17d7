// The scenario registry and scale names.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

#include "harness/runner/runner.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab {
namespace {

class NamedScenario : public Scenario {
 public:
  explicit NamedScenario(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::string summary() const override { return "a scenario for registry tests"; }
  std::vector<VariantSpec> variants() const override {
    return {{"broken", "fails", Expect::oom}, {"fixed", "fits", Expect::ok}};
  }
  std::string budget(Scale) const override { return "64MiB"; }
  int default_steps(Scale scale) const override { return scale == Scale::full ? 10 : 2; }
  void run(const std::string&, RunContext&) const override {}

 private:
  std::string name_;
};

TEST(Scale, NamesRoundTrip) {
  for (Scale scale : {Scale::tiny, Scale::small, Scale::full}) {
    EXPECT_EQ(parse_scale(scale_name(scale)), scale);
  }
  EXPECT_FALSE(parse_scale("huge").has_value());
  EXPECT_FALSE(parse_scale("").has_value());
}

TEST(ScenarioRegistry, FindsAndSortsByName) {
  auto& registry = ScenarioRegistry::instance();
  registry.add(std::make_unique<NamedScenario>("registry-test-zeta"));
  registry.add(std::make_unique<NamedScenario>("registry-test-alpha"));
  ASSERT_NE(registry.find("registry-test-zeta"), nullptr);
  EXPECT_EQ(registry.find("registry-test-zeta")->name(), "registry-test-zeta");
  EXPECT_EQ(registry.find("registry-test-missing"), nullptr);
  auto all = registry.all();
  ASSERT_GE(all.size(), 2u);
  for (std::size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1]->name(), all[i]->name());
}

TEST(ScenarioRegistry, RejectsDuplicatesAndNull) {
  auto& registry = ScenarioRegistry::instance();
  registry.add(std::make_unique<NamedScenario>("registry-test-twice"));
  EXPECT_THROW(registry.add(std::make_unique<NamedScenario>("registry-test-twice")),
               std::logic_error);
  EXPECT_THROW(registry.add(nullptr), std::logic_error);
}

TEST(SelectVariants, AllOrOneOrAClearError) {
  NamedScenario scenario("select-test");
  EXPECT_EQ(select_variants(scenario, "all"), (std::vector<std::string>{"broken", "fixed"}));
  EXPECT_EQ(select_variants(scenario, "fixed"), (std::vector<std::string>{"fixed"}));
  try {
    select_variants(scenario, "fixd");
    FAIL();
  } catch (const std::invalid_argument& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("'fixd'"), std::string::npos) << message;
    EXPECT_NE(message.find("broken, fixed"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace oomlab
