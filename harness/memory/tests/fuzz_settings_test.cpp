// OOMLAB_FUZZ_OPS / OOMLAB_FUZZ_SEEDS: values that parse, and one clear line for the rest.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_settings.hpp"
#include "invalid_argument_message.hpp"

namespace oomlab::memory::testing {
namespace {

using Seeds = std::vector<std::uint64_t>;

TEST(FuzzSettings, OperationsAreAWholeNumber) {
  EXPECT_EQ(parse_fuzz_operations("100000000"), 100000000u);
  EXPECT_EQ(parse_fuzz_operations(" 5 "), 5u);
}

TEST(FuzzSettings, SeedsAreAListOfNumbersAndRanges) {
  EXPECT_EQ(parse_fuzz_seeds("7"), (Seeds{7}));
  EXPECT_EQ(parse_fuzz_seeds("7,42"), (Seeds{7, 42}));
  EXPECT_EQ(parse_fuzz_seeds("1-3, 10"), (Seeds{1, 2, 3, 10}));
  EXPECT_EQ(parse_fuzz_seeds("18446744073709551614-18446744073709551615"),
            (Seeds{18446744073709551614u, 18446744073709551615u}));
}

TEST(FuzzSettings, RerunCommandNamesOneSeed) {
  FuzzSettings settings;
  settings.operations = 500;
  EXPECT_EQ(settings.rerun_command(17), "OOMLAB_FUZZ_OPS=500 OOMLAB_FUZZ_SEEDS=17");
}

void expect_rejected(const std::string& text, bool seeds, const std::string& mentions) {
  std::string message = invalid_argument_message(text, [&] {
    if (seeds) {
      parse_fuzz_seeds(text);
    } else {
      parse_fuzz_operations(text);
    }
  });
  EXPECT_NE(message.find(seeds ? "OOMLAB_FUZZ_SEEDS=" : "OOMLAB_FUZZ_OPS="), std::string::npos) << message;
  EXPECT_NE(message.find(mentions), std::string::npos) << message;
  EXPECT_LT(message.size(), 200u) << message;
}

TEST(FuzzSettings, RejectsOperationsThatAreNotAPositiveWholeNumber) {
  for (const char* text : {"", "abc", "1e8", "12abc", "-5", "0", "1.5", "99999999999999999999999"}) {
    expect_rejected(text, false, "expected a whole number of operations");
  }
}

TEST(FuzzSettings, RejectsSeedListsThatDoNotParse) {
  for (const char* text : {"", "x", "1,", ",1", "1,,2", "5-1", "1-", "-3", "1-2-3", "0x10"}) {
    expect_rejected(text, true, "expected seeds separated by commas");
  }
  expect_rejected("0-18446744073709551615", true, "at most 1000000 seeds");
  expect_rejected(std::string(5000, '9'), true, "(5000 chars)");
}

TEST(FuzzSettings, FromEnvUsesDefaultsWhenUnsetAndFailsOnBadValues) {
  ::unsetenv("OOMLAB_FUZZ_OPS");
  ::unsetenv("OOMLAB_FUZZ_SEEDS");
  FuzzSettings defaults = fuzz_settings_from_env();
  EXPECT_EQ(defaults.operations, FuzzSettings{}.operations);
  EXPECT_EQ(defaults.seeds, FuzzSettings{}.seeds);
  ::setenv("OOMLAB_FUZZ_SEEDS", "4-5", 1);
  EXPECT_EQ(fuzz_settings_from_env().seeds, (Seeds{4, 5}));
  ::setenv("OOMLAB_FUZZ_OPS", "lots", 1);
  EXPECT_THROW(fuzz_settings_from_env(), std::invalid_argument);
  ::unsetenv("OOMLAB_FUZZ_OPS");
  ::unsetenv("OOMLAB_FUZZ_SEEDS");
}

}  // namespace
}  // namespace oomlab::memory::testing
