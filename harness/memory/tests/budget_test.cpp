#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "invalid_argument_message.hpp"

namespace oomlab::memory {
namespace {
using namespace oomlab::literals;

TEST(GpuProfiles, TheRequiredCardsExist) {
  for (const char* name : {"rtx3060-12g", "rtx4060ti-8g", "rtx4060ti-16g", "rtx4090", "a100-40g",
                           "a100-80g", "h100-80g", "h200"}) {
    const GpuProfile* profile = find_gpu_profile(name);
    ASSERT_NE(profile, nullptr) << name;
    EXPECT_GT(profile->context_bytes, 0u);
    EXPECT_LT(profile->budget(), profile->card_bytes);
    EXPECT_FALSE(profile->description.empty());
  }
}

TEST(GpuProfiles, TheCardsUsersHaveExist) {  // issue 17: Turing through Blackwell
  for (const char* name : {"t4", "l4", "a10", "l40s", "rtx3090", "rtx4080", "rtx5090", "h100-pcie",
                           "h100-sxm", "b200"}) {
    EXPECT_NE(find_gpu_profile(name), nullptr) << name;
  }
  EXPECT_EQ(find_gpu_profile("t4")->card_bytes, 15360_MiB);
  EXPECT_EQ(find_gpu_profile("h100-sxm")->card_bytes, find_gpu_profile("h100-80g")->card_bytes);
}

TEST(GpuProfiles, EveryProfileHasAPositiveBudgetAndAUniqueName) {
  std::set<std::string> names;
  for (const GpuProfile& profile : gpu_profiles()) {
    EXPECT_TRUE(names.insert(profile.name).second) << "duplicate profile " << profile.name;
    EXPECT_GT(profile.context_bytes, 0u) << profile.name;
    EXPECT_GT(profile.card_bytes, profile.context_bytes) << profile.name;
    EXPECT_GT(profile.budget(), 1_GiB) << profile.name;
    EXPECT_FALSE(profile.description.empty()) << profile.name;
    // Parsed by name, the budget is the profile's.
    EXPECT_EQ(parse_budget(profile.name).bytes, profile.budget()) << profile.name;
  }
}

TEST(GpuProfiles, PrintedOneLineEach) {
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  ASSERT_NE(out, nullptr);
  print_gpu_profiles(out);
  std::fclose(out);
  const std::string printed(text, size);
  std::free(text);
  for (const GpuProfile& profile : gpu_profiles()) {
    EXPECT_NE(printed.find("\n" + profile.name + " "), std::string::npos) << profile.name;
    EXPECT_NE(printed.find(format_size(profile.budget())), std::string::npos) << profile.name;
  }
}

TEST(GpuProfiles, CardBytesAreWhatTheDriverReports) {
  EXPECT_EQ(find_gpu_profile("h200")->card_bytes, 143771_MiB);
  EXPECT_EQ(find_gpu_profile("h100-80g")->card_bytes, 81559_MiB);
  EXPECT_EQ(find_gpu_profile("rtx4090")->card_bytes, 24564_MiB);
  EXPECT_EQ(find_gpu_profile("h200")->context_bytes, 529_MiB);
}

TEST(ParseBudget, ProfileIsCardMinusContext) {
  Budget budget = parse_budget("rtx4090");
  const GpuProfile* profile = find_gpu_profile("rtx4090");
  EXPECT_EQ(budget.bytes, profile->card_bytes - profile->context_bytes);
  EXPECT_EQ(budget.profile, "rtx4090");
  EXPECT_EQ(budget.context_bytes, profile->context_bytes);
  EXPECT_EQ(budget.describe(), "rtx4090 (" + format_size(budget.bytes) + ")");
}

TEST(ParseBudget, PlainSize) {
  Budget budget = parse_budget("12GiB");
  EXPECT_EQ(budget.bytes, 12_GiB);
  EXPECT_TRUE(budget.profile.empty());
  EXPECT_EQ(budget.context_bytes, 0u);
  EXPECT_EQ(budget.describe(), "12.00GiB");
  EXPECT_EQ(parse_budget("1.5GB").bytes, 1500000000u);
}

TEST(ParseBudget, SurroundingBlanksAreIgnored) {
  EXPECT_EQ(parse_budget(" rtx4090 ").profile, "rtx4090");
  EXPECT_EQ(parse_budget("\t12GiB ").bytes, 12_GiB);
}

TEST(ParseBudget, UnlimitedAndNoneMeanNoCap) {
  for (const char* text : {"unlimited", "none"}) {
    Budget budget = parse_budget(text);
    EXPECT_EQ(budget.bytes, AllocatorConfig::kUnlimited) << text;
    EXPECT_TRUE(budget.profile.empty());
    EXPECT_EQ(budget.context_bytes, 0u);
    EXPECT_EQ(budget.describe(), "unlimited");
  }
}

TEST(FormatBudget, UnlimitedOrASize) {
  EXPECT_EQ(format_budget(AllocatorConfig::kUnlimited), "unlimited");
  EXPECT_EQ(format_budget(12_GiB), "12.00GiB");
}

// Returns the message; checks what every refusal has: the reason `why` and what a budget can be.
std::string rejection(const std::string& text, const std::string& why) {
  std::string message = testing::invalid_argument_message(text, [&] { parse_budget(text); });
  EXPECT_NE(message.find(why), std::string::npos) << "says '" << why << "': " << message;
  EXPECT_NE(message.find("rtx4090"), std::string::npos) << "lists the profiles: " << message;
  EXPECT_NE(message.find("unlimited"), std::string::npos) << "says unlimited exists: " << message;
  return message;
}

void expect_rejected(const std::string& text, const std::string& why) {
  std::string message = rejection(text, why);
  EXPECT_NE(message.find("'" + text + "'"), std::string::npos) << "quotes the text: " << message;
}

TEST(ParseBudget, RejectsNegative) {
  expect_rejected("-1", "negative");
  expect_rejected("-1GiB", "negative");
}
TEST(ParseBudget, RejectsZero) { expect_rejected("0GiB", "positive"); }
TEST(ParseBudget, RejectsUnknownUnit) { expect_rejected("10XB", "unknown unit 'XB'"); }
TEST(ParseBudget, RejectsUnknownProfile) { expect_rejected("rtx9999", "nor a known GPU profile"); }
TEST(ParseBudget, RejectsEmptySayingSo) {
  expect_rejected("", "empty");
  expect_rejected("  ", "empty");
}

// "24" as 24 bytes, "1.5" as 2 bytes: never what was meant.
TEST(ParseBudget, RejectsNumbersWithoutAUnit) {
  expect_rejected("1.5", "no unit: write 1.5GiB or 1.5MiB");
  expect_rejected("24", "no unit: write 24GiB or 24MiB");
  expect_rejected("4096", "no unit");
  expect_rejected("0", "no unit");
  expect_rejected("18446744073709551616", "no unit (a bare number is not read as bytes)");
}

TEST(ParseBudget, RejectsNonFiniteAndHugeValuesInOneLine) {
  expect_rejected("nanGiB", "nor a known GPU profile");
  expect_rejected("infGiB", "nor a known GPU profile");
  expect_rejected("1e30GiB", "unknown unit 'e30GiB'");
  expect_rejected("18446744073709551616B", "too large");
  expect_rejected("99999999999GiB", "too large");
  expect_rejected("1e400", "unknown unit 'e400'");
}

TEST(ParseBudget, LongInputIsQuotedCapped) {
  // A bare number, a name, and a number with a long unit (quoted in the reason too).
  for (const std::string& text : {std::string(5000, '7'), std::string(5000, 'x'), "1" + std::string(4999, 'G')}) {
    std::string message = rejection(text, "...' (5000 chars)");
    EXPECT_LT(message.size(), 512u) << message;
  }
}

}  // namespace
}  // namespace oomlab::memory
