#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "harness/memory/size.hpp"

namespace oomlab {
namespace {
using namespace oomlab::literals;

TEST(ParseSize, BinaryUnits) {
  EXPECT_EQ(parse_size("12GiB"), 12_GiB);
  EXPECT_EQ(parse_size("512MiB"), 512_MiB);
  EXPECT_EQ(parse_size("64KiB"), 64_KiB);
  EXPECT_EQ(parse_size("3 MiB"), 3_MiB);
  EXPECT_EQ(parse_size("2gib"), 2_GiB);
  EXPECT_EQ(parse_size("1.5GiB"), 1536_MiB);
}

TEST(ParseSize, SiUnitsArePowersOfTen) {
  EXPECT_EQ(parse_size("1.5GB"), 1500000000u);
  EXPECT_EQ(parse_size("2MB"), 2000000u);
  EXPECT_EQ(parse_size("1KB"), 1000u);
}

TEST(ParseSize, PlainBytes) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("512B"), 512u);
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("18446744073709551615"), 18446744073709551615ull);
}

void expect_rejected(const std::string& text) {
  try {
    parse_size(text);
    ADD_FAILURE() << "accepted '" << text << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'" + text + "'"), std::string::npos) << e.what();
  }
}

TEST(ParseSize, RejectsNegative) { expect_rejected("-1"); }
TEST(ParseSize, RejectsUnknownUnit) { expect_rejected("10XB"); }

TEST(ParseSize, ReasonNamesTheUnitAndTheKnownOnes) {
  try {
    parse_size("1e30GiB");
    ADD_FAILURE() << "accepted";
  } catch (const InvalidSize& e) {
    EXPECT_EQ(e.reason(), "unknown unit 'e30GiB' (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
    EXPECT_NE(std::string(e.what()).find("'1e30GiB'"), std::string::npos) << e.what();
  }
}
TEST(ParseSize, RejectsEmpty) { expect_rejected(""); }
TEST(ParseSize, RejectsNoNumber) {
  expect_rejected("GiB");
  expect_rejected(".");
  expect_rejected("abc");
}
TEST(ParseSize, RejectsTwoDots) { expect_rejected("1.2.3GiB"); }
TEST(ParseSize, RejectsOverflow) {
  expect_rejected("18446744073709551616");
  expect_rejected("99999999999GiB");
  expect_rejected("20000000000.5GiB");
}

TEST(FormatSize, BytesBelowOneKiB) {
  EXPECT_EQ(format_size(0), "0B");
  EXPECT_EQ(format_size(512), "512B");
  EXPECT_EQ(format_size(1023), "1023B");
}

TEST(FormatSize, TwoDecimalsInBinaryUnits) {
  EXPECT_EQ(format_size(1536), "1.50KiB");
  EXPECT_EQ(format_size(12_GiB), "12.00GiB");
  EXPECT_EQ(format_size(300_MiB), "300.00MiB");
}

TEST(FormatSize, RoundTripsThroughTheParser) {
  for (std::size_t bytes : {512_MiB, 12_GiB, 20_MiB, 64_KiB}) EXPECT_EQ(parse_size(format_size(bytes)), bytes);
}

TEST(FormatSizeDelta, Signed) {
  EXPECT_EQ(format_size_delta(288 * static_cast<std::int64_t>(MiB)), "+288.00MiB");
  EXPECT_EQ(format_size_delta(-1024), "-1.00KiB");
  EXPECT_EQ(format_size_delta(0), "+0B");
  EXPECT_FALSE(format_size_delta(INT64_MIN).empty());
}

// Counts from user-given extents saturate instead of wrapping: llama-13b at B = T = 2^20 printed
// "248.01PiB per block" (the true figure is past 2^64 bytes).
TEST(SaturatingSize, SaturatesInsteadOfWrapping) {
  EXPECT_EQ(saturating_mul(std::size_t{1} << 40, std::size_t{1} << 30), kSizeSaturated);
  EXPECT_EQ(saturating_mul(std::size_t{1} << 31, std::size_t{1} << 31), std::size_t{1} << 62);
  EXPECT_EQ(saturating_mul(kSizeSaturated, 0), 0u);
  EXPECT_EQ(saturating_add(kSizeSaturated - 1, 2), kSizeSaturated);
  const SaturatingSize scores =
      SaturatingSize(std::size_t{1} << 20) * 40 * (std::size_t{1} << 20) * (std::size_t{1} << 20);
  EXPECT_EQ(scores.value, kSizeSaturated);
  EXPECT_EQ((scores + 1).value, kSizeSaturated);
  EXPECT_EQ(format_size(kSizeSaturated), "more than 16.00EiB");
}

}  // namespace
}  // namespace oomlab
