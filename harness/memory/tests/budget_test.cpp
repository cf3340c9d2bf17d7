#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"

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

void expect_rejected(const std::string& text) {
  try {
    parse_budget(text);
    ADD_FAILURE() << "accepted '" << text << "'";
  } catch (const std::invalid_argument& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("'" + text + "'"), std::string::npos) << message;
    EXPECT_NE(message.find("rtx4090"), std::string::npos) << "lists the profiles: " << message;
  }
}

TEST(ParseBudget, RejectsNegative) { expect_rejected("-1"); }
TEST(ParseBudget, RejectsZero) { expect_rejected("0"); }
TEST(ParseBudget, RejectsUnknownUnit) { expect_rejected("10XB"); }
TEST(ParseBudget, RejectsUnknownProfile) { expect_rejected("rtx9999"); }
TEST(ParseBudget, RejectsEmpty) { expect_rejected(""); }

}  // namespace
}  // namespace oomlab::memory
