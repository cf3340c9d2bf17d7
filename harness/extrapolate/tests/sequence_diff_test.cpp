#include "harness/extrapolate/sequence_diff.hpp"

#include <random>

#include <gtest/gtest.h>

namespace oomlab::extrapolate {
namespace {

std::size_t matched_count(const std::vector<std::size_t>& matches) {
  std::size_t n = 0;
  for (std::size_t m : matches) n += m != kUnmatched;
  return n;
}

// The textbook LCS length, O(N M): the reference the linear-space diff is checked against.
std::size_t lcs_length(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
  std::vector<std::vector<std::size_t>> table(a.size() + 1, std::vector<std::size_t>(b.size() + 1, 0));
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      table[i][j] = a[i - 1] == b[j - 1] ? table[i - 1][j - 1] + 1 : std::max(table[i - 1][j], table[i][j - 1]);
    }
  }
  return table[a.size()][b.size()];
}

void expect_valid(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b,
                  const std::vector<std::size_t>& matches) {
  std::size_t last = 0;
  bool any = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (matches[i] == kUnmatched) continue;
    ASSERT_LT(matches[i], b.size());
    EXPECT_EQ(a[i], b[matches[i]]);
    if (any) {
      EXPECT_GT(matches[i], last);
    }
    last = matches[i];
    any = true;
  }
}

TEST(SequenceDiff, ExtraRequestsShiftNothing) {
  const std::vector<std::uint64_t> a{1, 2, 3, 4, 5, 6};
  const std::vector<std::uint64_t> b{1, 2, 9, 9, 3, 4, 5, 9, 6};
  const std::vector<std::size_t> matches = match_sequences(a, b);
  EXPECT_EQ(matches, (std::vector<std::size_t>{0, 1, 4, 5, 6, 8}));
}

TEST(SequenceDiff, NothingInCommon) {
  const std::vector<std::size_t> matches = match_sequences({1, 2, 3}, {4, 5});
  EXPECT_EQ(matched_count(matches), 0u);
  EXPECT_EQ(matched_count(match_sequences({}, {1})), 0u);
}

TEST(SequenceDiff, LongestOnRandomSequences) {
  std::mt19937 random(7);
  for (int round = 0; round < 200; ++round) {
    std::uniform_int_distribution<int> length(0, 40), symbol(0, round % 2 == 0 ? 3 : 12);
    std::vector<std::uint64_t> a(static_cast<std::size_t>(length(random))), b(static_cast<std::size_t>(length(random)));
    for (auto& v : a) v = static_cast<std::uint64_t>(symbol(random));
    for (auto& v : b) v = static_cast<std::uint64_t>(symbol(random));
    const std::vector<std::size_t> matches = match_sequences(a, b);
    expect_valid(a, b, matches);
    EXPECT_EQ(matched_count(matches), lcs_length(a, b)) << "round " << round;
  }
}

}  // namespace
}  // namespace oomlab::extrapolate
