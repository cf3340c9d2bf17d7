#include <gtest/gtest.h>

#include <string>

#include "harness/memory/user_text.hpp"

namespace oomlab {
namespace {

TEST(QuoteUserText, ShortTextIsQuotedWhole) {
  EXPECT_EQ(quote_user_text("12GiB"), "'12GiB'");
  EXPECT_EQ(quote_user_text(""), "''");
}

TEST(QuoteUserText, LongTextIsCappedWithItsLength) {
  std::string quoted = quote_user_text(std::string(5000, 'a'), 10);
  EXPECT_EQ(quoted, "'aaaaaaaaaa...' (5000 chars)");
  EXPECT_EQ(quote_user_text(std::string(10, 'a'), 10), "'aaaaaaaaaa'");
}

// A pasted newline must not split the one-line error.
TEST(QuoteUserText, ControlCharactersAreEscaped) {
  EXPECT_EQ(quote_user_text("12\nGiB\t\x7f"), "'12\\x0aGiB\\x09\\x7f'");
}

TEST(QuoteUserText, EscapesCountTowardsTheCap) {
  EXPECT_EQ(quote_user_text(std::string(100, '\n'), 8), "'\\x0a\\x0a...' (100 chars)");
}

TEST(TrimBlanks, SpacesAndTabsAtBothEnds) {
  EXPECT_EQ(trim_blanks(" \t a b \t"), "a b");
  EXPECT_EQ(trim_blanks("   "), "");
}

}  // namespace
}  // namespace oomlab
