#include "harness/extrapolate/size_fit.hpp"

#include <gtest/gtest.h>

namespace oomlab::extrapolate {
namespace {

TEST(SizeFit, AffineFromTwoPointsIsExactButUnchecked) {
  const auto fit = fit_size({1, 2}, {4012, 8012}, FitMode::automatic);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->degree, 1);
  EXPECT_EQ(fit->a, 12);
  EXPECT_EQ(fit->b, 4000);
  EXPECT_FALSE(fit->checked);
  EXPECT_EQ(size_at(*fit, 32), 128012u);
  EXPECT_EQ(fit->formula("batch"), "12 + 4000*batch");
}

TEST(SizeFit, ThirdPointChecksTheLine) {
  const auto fit = fit_size({4, 1, 2}, {16012, 4012, 8012}, FitMode::automatic);
  ASSERT_TRUE(fit);
  EXPECT_TRUE(fit->checked);
  EXPECT_FALSE(fit_size({1, 2, 4}, {4012, 8012, 16013}, FitMode::affine));
}

TEST(SizeFit, ConstantIsDegreeZero) {
  const auto fit = fit_size({1, 2, 4}, {50'000'000, 50'000'000, 50'000'000}, FitMode::automatic);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->degree, 0);
  EXPECT_EQ(size_at(*fit, 1000), 50'000'000u);
}

TEST(SizeFit, QuadraticWhenTheLineFails) {
  // 4096 + 1'400'000 b^2: naive attention scores in the sequence length.
  const std::vector<std::uint64_t> sizes{4096 + 1'400'000, 4096 + 4 * 1'400'000, 4096 + 16 * 1'400'000};
  EXPECT_FALSE(fit_size({1, 2, 4}, sizes, FitMode::affine));
  const auto fit = fit_size({1, 2, 4}, sizes, FitMode::automatic);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->degree, 2);
  EXPECT_EQ(fit->c, 1'400'000);
  EXPECT_EQ(fit->b, 0);
  EXPECT_EQ(fit->a, 4096);
  EXPECT_EQ(size_at(*fit, 8), 4096u + 64u * 1'400'000u);
  EXPECT_FALSE(fit_size({1, 2}, {1, 4}, FitMode::quadratic)) << "a quadratic needs three points";
}

TEST(SizeFit, AQuadraticWithANegativeTermIsNoTensorsSize) {
  // 4000, 7000, 10000 at 1, 2, 4: 500 + 4000 k - 500 k^2 through the points, negative past k = 8.
  EXPECT_FALSE(fit_size({1, 2, 4}, {4000, 7000, 10000}, FitMode::automatic));
  EXPECT_FALSE(fit_size({1, 2, 4}, {4000, 7000, 10000}, FitMode::quadratic));
  // cuDNN's workspace in ResNet-50's backward (H200): 4608, 4608, 10616832 bytes at batch 1, 2, 4
  // meet 3542016 - 5306112 k + 1768704 k^2: 106 MiB at batch 8 from a coincidence.
  EXPECT_FALSE(fit_size({1, 2, 4}, {4608, 4608, 10616832}, FitMode::automatic));
}

TEST(SizeFit, NonIntegerCoefficientsAreNoFit) {
  EXPECT_FALSE(fit_size({1, 3}, {1000, 1001}, FitMode::automatic));  // slope 1/2
  EXPECT_FALSE(fit_size({1, 2, 4}, {512, 1536, 1024}, FitMode::automatic));  // c = -1/3... not integer
}

TEST(SizeFit, OutOfRangeSizes) {
  const auto falling = fit_size({1, 2}, {3000, 2000}, FitMode::automatic);
  ASSERT_TRUE(falling);
  EXPECT_FALSE(size_at(*falling, 4));  // -0 bytes
  const auto huge = fit_size({1, 2}, {std::uint64_t{1} << 40, std::uint64_t{2} << 40}, FitMode::automatic);
  ASSERT_TRUE(huge);
  EXPECT_FALSE(size_at(*huge, 1 << 20));  // 2^60: more than any GPU
}

}  // namespace
}  // namespace oomlab::extrapolate
