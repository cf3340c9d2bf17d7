#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/size.hpp"
#include "invalid_argument_message.hpp"

namespace oomlab::memory {
namespace {
using namespace oomlab::literals;

TEST(ParseAllocConf, BothKeys) {
  AllocatorConfig config = parse_alloc_conf("max_split_size_mb:128,expandable_segments:true");
  EXPECT_EQ(config.max_split_size, 128_MiB);
  EXPECT_TRUE(config.expandable_segments);
}

TEST(ParseAllocConf, SpacesAroundItemsAreAllowed) {
  AllocatorConfig config = parse_alloc_conf(" max_split_size_mb : 64 , expandable_segments:false ");
  EXPECT_EQ(config.max_split_size, 64_MiB);
  EXPECT_FALSE(config.expandable_segments);
}

TEST(ParseAllocConf, EmptyKeepsTheBase) {
  AllocatorConfig base;
  base.budget = 3_GiB;
  base.expandable_segments = true;
  AllocatorConfig config = parse_alloc_conf("", base);
  EXPECT_EQ(config.budget, 3_GiB);
  EXPECT_TRUE(config.expandable_segments);
  EXPECT_EQ(config.max_split_size, AllocatorConfig::kUnlimited);
}

TEST(ParseAllocConf, MinimumMaxSplitIsTwentyMiB) {
  EXPECT_EQ(parse_alloc_conf("max_split_size_mb:20").max_split_size, 20_MiB);
}

TEST(ParseAllocConf, ToStringRoundTrips) {
  AllocatorConfig config = parse_alloc_conf("max_split_size_mb:256,expandable_segments:true");
  EXPECT_EQ(config.to_string(), "max_split_size_mb:256,expandable_segments:true");
  AllocatorConfig again = parse_alloc_conf(config.to_string());
  EXPECT_EQ(again.max_split_size, config.max_split_size);
  EXPECT_EQ(again.expandable_segments, config.expandable_segments);
  EXPECT_EQ(AllocatorConfig{}.to_string(), "expandable_segments:false");
}

std::string expect_rejected(const std::string& text, const std::string& mentions) {
  std::string message = testing::invalid_argument_message(text, [&] { parse_alloc_conf(text); });
  EXPECT_NE(message.find(mentions), std::string::npos) << message;
  EXPECT_NE(message.find("OOMLAB_ALLOC_CONF"), std::string::npos) << message;
  return message;
}

TEST(ParseAllocConf, RejectsMaxSplitBelowTwenty) { expect_rejected("max_split_size_mb:19", ">= 20"); }
TEST(ParseAllocConf, RejectsNonNumericMaxSplit) { expect_rejected("max_split_size_mb:abc", "'abc'"); }
TEST(ParseAllocConf, RejectsMissingValue) { expect_rejected("max_split_size_mb:", "needs a value"); }
TEST(ParseAllocConf, RejectsMissingColon) { expect_rejected("max_split_size_mb", "no ':value'"); }
TEST(ParseAllocConf, RejectsBadBool) { expect_rejected("expandable_segments:maybe", "'maybe'"); }
TEST(ParseAllocConf, RejectsUnknownKey) { expect_rejected("max_split_mb:64", "unknown key 'max_split_mb'"); }
TEST(ParseAllocConf, RejectsEmptyEntries) {
  expect_rejected(",", "empty entry");
  expect_rejected("max_split_size_mb:64,", "empty entry");
  expect_rejected("max_split_size_mb:64,,expandable_segments:true", "empty entry");
}
TEST(ParseAllocConf, RejectsHugeMaxSplit) { expect_rejected("max_split_size_mb:99999999999999999999", "too large"); }

// "last wins" would hide a typo'd override: 64 silently became 999999.
TEST(ParseAllocConf, RejectsAKeyGivenTwiceNamingIt) {
  expect_rejected("max_split_size_mb:64,max_split_size_mb:999999",
                  "'max_split_size_mb' is given twice ('64', then '999999')");
  expect_rejected("expandable_segments:true, expandable_segments : true", "'expandable_segments' is given twice");
}

// The environment's value overridden by --alloc-conf: two texts, so layering, not a repeat.
TEST(ParseAllocConf, ALaterTextOverridesTheBase) {
  AllocatorConfig from_env = parse_alloc_conf("max_split_size_mb:64,expandable_segments:true");
  AllocatorConfig config = parse_alloc_conf("max_split_size_mb:128", from_env);
  EXPECT_EQ(config.max_split_size, 128_MiB);
  EXPECT_TRUE(config.expandable_segments);
}

TEST(ParseAllocConf, LongInputIsQuotedCapped) {
  std::string message = expect_rejected("expandable_segments:" + std::string(5000, 'y'), "(5020 chars)");
  EXPECT_NE(message.find("(5000 chars)"), std::string::npos) << "the value too: " << message;
  EXPECT_LT(message.size(), 400u) << message;
}

TEST(ParseAllocConf, LeadingZerosDoNotLengthenTheMessage) {
  expect_rejected("max_split_size_mb:" + std::string(3000, '0') + "19", "got 19 (");
}

TEST(AllocConfFromEnv, ReadsTheVariable) {
  ::setenv("OOMLAB_ALLOC_CONF", "expandable_segments:true", 1);
  EXPECT_TRUE(alloc_conf_from_env().expandable_segments);
  ::setenv("OOMLAB_ALLOC_CONF", "bogus", 1);
  EXPECT_THROW(alloc_conf_from_env(), std::invalid_argument);
  ::unsetenv("OOMLAB_ALLOC_CONF");
  AllocatorConfig base;
  base.max_split_size = 64_MiB;
  EXPECT_EQ(alloc_conf_from_env(base).max_split_size, 64_MiB);
}

// ---- PyTorch's other keys (c10/core/AllocatorConfig.cpp) ----
TEST(ParseAllocConf, PyTorchsCapitalisedBooleans) {
  EXPECT_TRUE(parse_alloc_conf("expandable_segments:True").expandable_segments);
  EXPECT_FALSE(parse_alloc_conf("expandable_segments:False").expandable_segments);
}

TEST(ParseAllocConf, RoundupDivisionsSingleValueAppliesEverywhere) {
  AllocatorConfig config = parse_alloc_conf("roundup_power2_divisions:4");
  for (std::size_t d : config.roundup_power2_divisions) EXPECT_EQ(d, 4u);
  expect_rejected("roundup_power2_divisions:3", "power of two");
  expect_rejected("roundup_power2_divisions:0", "power of two");
}

TEST(ParseAllocConf, RoundupDivisionsListFillsBelowTheFirstAndAfterTheLastWithGreater) {
  // 256 MiB is interval 8, 512 MiB interval 9; the first value also covers 0..7, '>' 10..15.
  AllocatorConfig config = parse_alloc_conf("roundup_power2_divisions:[256:1,512:2,>:4],expandable_segments:True");
  RoundupTable expected{};
  for (std::size_t i = 0; i <= 8; ++i) expected[i] = 1;
  expected[9] = 2;
  for (std::size_t i = 10; i < kRoundupIntervals; ++i) expected[i] = 4;
  EXPECT_EQ(config.roundup_power2_divisions, expected);
  EXPECT_TRUE(config.expandable_segments);  // the list's commas do not end the entry
  expect_rejected("roundup_power2_divisions:[300:2]", "powers of two");
  expect_rejected("roundup_power2_divisions:[256:3]", "power of two or 0");
  expect_rejected("roundup_power2_divisions:[256:2", "closing ']'");
}

TEST(ParseAllocConf, RoundupDivisionsRoundTripThroughToString) {
  for (const char* text : {"roundup_power2_divisions:8", "roundup_power2_divisions:[1:2,64:0,>:8]"}) {
    AllocatorConfig config = parse_alloc_conf(text);
    EXPECT_EQ(parse_alloc_conf(config.to_string()).roundup_power2_divisions, config.roundup_power2_divisions) << text;
  }
}

TEST(ParseAllocConf, MaxNonSplitRoundingIsAtLeastTwentyMiB) {
  EXPECT_EQ(parse_alloc_conf("max_non_split_rounding_mb:64").max_non_split_rounding, 64_MiB);
  expect_rejected("max_non_split_rounding_mb:8", ">= 20");
}

TEST(ParseAllocConf, GarbageCollectionThresholdIsAFractionStrictlyInside) {
  EXPECT_DOUBLE_EQ(parse_alloc_conf("garbage_collection_threshold:0.6").garbage_collection_threshold, 0.6);
  expect_rejected("garbage_collection_threshold:1.0", "between 0 and 1");
  expect_rejected("garbage_collection_threshold:0", "between 0 and 1");
  expect_rejected("garbage_collection_threshold:-0.5", "between 0 and 1");
  EXPECT_EQ(parse_alloc_conf("garbage_collection_threshold:0.6").to_string(),
            "garbage_collection_threshold:0.6,expandable_segments:false");
}

TEST(ParseAllocConf, BackendNativeOnly) {
  EXPECT_NO_THROW(parse_alloc_conf("backend:native"));
  expect_rejected("backend:cudaMallocAsync", "does not model");
}

TEST(ParseAllocConf, PinnedAndLockKeysAreAcceptedWithANote) {
  AllocatorConfig config = parse_alloc_conf(
      "pinned_use_cuda_host_register:True,pinned_num_register_threads:8,release_lock_on_cudamalloc:True");
  ASSERT_EQ(config.notes.size(), 3u);
  EXPECT_NE(config.notes[0].find("pinned host memory is not simulated"), std::string::npos) << config.notes[0];
  EXPECT_EQ(config.to_string(), AllocatorConfig{}.to_string());  // they change nothing
  expect_rejected("pinned_num_register_threads:3", "power of two");
  expect_rejected("pinned_num_register_threads:256", "too large");
}

TEST(ParseAllocConf, CachingFalseIsTheNoCachingMode) {
  AllocatorConfig config = parse_alloc_conf("caching:false");
  EXPECT_FALSE(config.caching);
  EXPECT_EQ(config.to_string(), "expandable_segments:false,caching:false");
}

TEST(AllocConfFromEnv, NoMemoryCachingLikePyTorchs) {
  ::setenv("OOMLAB_NO_MEMORY_CACHING", "1", 1);
  EXPECT_FALSE(alloc_conf_from_env().caching);
  ::setenv("OOMLAB_NO_MEMORY_CACHING", "0", 1);
  EXPECT_TRUE(alloc_conf_from_env().caching);
  ::unsetenv("OOMLAB_NO_MEMORY_CACHING");
  EXPECT_TRUE(alloc_conf_from_env().caching);
}

}  // namespace
}  // namespace oomlab::memory
