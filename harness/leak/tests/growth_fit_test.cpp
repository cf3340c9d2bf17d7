// The growth fit on synthetic step-boundary series: what must stay ok (noise, plateaus, a
// sawtooth without growth, a warm-up that stops) and what must be a leak (slow leaks, a sawtooth
// over a growing floor, a leak that starts mid-run), with the bytes/step it must measure.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "harness/leak/growth_fit.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::leak {
namespace {

using namespace oomlab::literals;

struct Series {
  std::vector<std::int64_t> steps, bytes;
};

Series make_series(int count, const std::function<double(int)>& bytes_at) {
  Series s;
  for (int k = 0; k < count; ++k) {
    s.steps.push_back(k);
    s.bytes.push_back(static_cast<std::int64_t>(std::llround(bytes_at(k))));
  }
  return s;
}

Series prefix(const Series& s, std::size_t n) {
  return {{s.steps.begin(), s.steps.begin() + n}, {s.bytes.begin(), s.bytes.begin() + n}};
}

// The first prefix length at which the fit calls the growth steady; -1 if none.
int first_steady_prefix(const Series& s, const GrowthCriteria& c = {}) {
  for (std::size_t n = 1; n <= s.steps.size(); ++n) {
    if (fit_growth(prefix(s, n).steps, prefix(s, n).bytes, c).steady) return static_cast<int>(n);
  }
  return -1;
}

TEST(TheilSen, ExactOnLinearAndConstantSeries) {
  EXPECT_EQ(theil_sen_slope({0, 1, 2, 3, 4}, {7, 7, 7, 7, 7}), 0.0);
  EXPECT_EQ(theil_sen_slope({0, 1, 2, 3, 4, 5}, {10, 13, 16, 19, 22, 25}), 3.0);
  EXPECT_EQ(theil_sen_slope({3}, {1}), 0.0);
  EXPECT_EQ(theil_sen_slope({2, 2, 2}, {1, 5, 9}), 0.0);  // no two distinct x
}

TEST(TheilSen, IgnoresAFewOutliers) {
  // 12 points on slope 5, two wild ones: the median of pairwise slopes stays near 5.
  std::vector<double> x, y;
  for (int i = 0; i < 12; ++i) {
    x.push_back(i);
    y.push_back(100 + 5.0 * i);
  }
  y[3] = 1e6;
  y[8] = -1e6;
  EXPECT_NEAR(theil_sen_slope(x, y), 5.0, 0.5);
}

TEST(GrowthFit, NeedsEnoughSamplesBeforeAnyVerdict) {
  const Series leak = make_series(20, [](int k) { return 1_GiB + k * 1_MiB; });
  const GrowthCriteria c;  // window 16, floor_span 4, min_floor_points 8: 11 samples
  EXPECT_FALSE(fit_growth(prefix(leak, 10).steps, prefix(leak, 10).bytes, c).enough_samples);
  EXPECT_TRUE(fit_growth(prefix(leak, 11).steps, prefix(leak, 11).bytes, c).enough_samples);
  // ... and one more to confirm the verdict on a second window (confirm_samples 2).
  EXPECT_EQ(first_steady_prefix(leak), 12);
}

TEST(GrowthFit, FlatRunIsOkWithSlopeExactlyZero) {
  const Series flat = make_series(40, [](int) { return 3_GiB; });
  const GrowthFit fit = fit_growth(flat.steps, flat.bytes);
  EXPECT_TRUE(fit.enough_samples);
  EXPECT_FALSE(fit.steady);
  EXPECT_EQ(fit.bytes_per_step, 0.0);
  EXPECT_EQ(fit.slope_whole, 0.0);
}

TEST(GrowthFit, PureNoiseIsNeverALeak) {
  // 200 seeded runs of +-64 MiB uniform noise around 4 GiB, judged after every sample.
  for (unsigned seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> noise(-64.0 * MiB, 64.0 * MiB);
    const Series s = make_series(60, [&](int) { return 4_GiB + noise(rng); });
    EXPECT_EQ(first_steady_prefix(s), -1) << "seed " << seed;
  }
  // And 100 of Gaussian noise (sigma 30 MiB), whose tails are longer.
  for (unsigned seed = 1; seed <= 100; ++seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0.0, 30.0 * MiB);
    const Series s = make_series(60, [&](int) { return 4_GiB + noise(rng); });
    EXPECT_EQ(first_steady_prefix(s), -1) << "seed " << seed;
  }
}

TEST(GrowthFit, SlowExactLeakIsMeasuredExactly) {
  // 4 KiB per step on 2 GiB: one kept scalar-sized tensor per step.
  const Series s = make_series(30, [](int k) { return 2_GiB + k * 4_KiB; });
  const GrowthFit fit = fit_growth(s.steps, s.bytes);
  EXPECT_TRUE(fit.steady);
  EXPECT_EQ(fit.bytes_per_step, 4096.0);
}

TEST(GrowthFit, SlowLeakUnderNoiseIsFoundWithinTwentyPercent) {
  // 2 MiB/step under +-4 MiB noise: invisible step to step, clear over a 32-sample window.
  GrowthCriteria c;
  c.window = 32;
  for (unsigned seed = 1; seed <= 50; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> noise(-4.0 * MiB, 4.0 * MiB);
    const Series s = make_series(64, [&](int k) { return 6_GiB + k * 2_MiB + noise(rng); });
    const GrowthFit fit = fit_growth(s.steps, s.bytes, c);
    EXPECT_TRUE(fit.steady) << "seed " << seed;
    EXPECT_NEAR(fit.bytes_per_step, 2.0 * MiB, 0.2 * 2.0 * MiB) << "seed " << seed;
  }
}

TEST(GrowthFit, PlateausAreNotLeaks) {
  // Flat, a one-time jump (a lazily created buffer), flat, another jump, flat: judged after
  // every sample, never a leak.
  const Series s = make_series(60, [](int k) {
    return 1_GiB + (k >= 15 ? 300_MiB : 0) + (k >= 37 ? 120_MiB : 0);
  });
  EXPECT_EQ(first_steady_prefix(s), -1);
}

TEST(GrowthFit, SawtoothWithoutGrowthIsOk) {
  // Allocate-free with period 3 (a buffer held across two steps, then freed).
  const Series s = make_series(50, [](int k) { return 1_GiB + (k % 3) * 200_MiB; });
  EXPECT_EQ(first_steady_prefix(s), -1);
}

TEST(GrowthFit, SawtoothOverAGrowingFloorIsALeak) {
  // The same sawtooth over a floor that grows 5 MiB/step: the floor is fitted, not the teeth.
  const Series s = make_series(50, [](int k) { return 1_GiB + k * 5_MiB + (k % 4) * 200_MiB; });
  const int found = first_steady_prefix(s);
  ASSERT_GT(found, 0);
  EXPECT_LE(found, 16);
  const GrowthFit fit = fit_growth(s.steps, s.bytes);
  EXPECT_TRUE(fit.steady);
  EXPECT_NEAR(fit.bytes_per_step, 5.0 * MiB, 0.1 * 5.0 * MiB);
}

TEST(GrowthFit, LeakStartingMidRunIsFoundSoonAndMeasuredAtItsOwnRate) {
  const int start = 30;
  const Series s = make_series(70, [&](int k) { return 2_GiB + (k > start ? (k - start) * 3_MiB : 0); });
  const int found = first_steady_prefix(s);
  ASSERT_GT(found, start) << "no leak may be reported before it starts";
  EXPECT_LE(found, start + 12) << "found too late";
  // Once the recent half of the window is all leak, the rate is exact.
  const GrowthFit fit = fit_growth(s.steps, s.bytes);
  EXPECT_TRUE(fit.steady);
  EXPECT_EQ(fit.bytes_per_step, 3.0 * MiB);
}

TEST(GrowthFit, WarmUpGrowthThatStopsIsNotALeak) {
  // The first steps create optimizer state, cuBLAS workspaces, cached blocks; then flat.
  const Series s = make_series(60, [](int k) { return 1_GiB + std::min(k, 5) * 256_MiB; });
  EXPECT_EQ(first_steady_prefix(s), -1);
}

TEST(GrowthFit, LeakWithOutlierSpikesIsStillMeasured) {
  const Series s = make_series(40, [](int k) {
    const double spike = (k == 31 || k == 36) ? 2.0 * GiB : 0.0;  // one-step transient peaks
    return 1_GiB + k * 8_MiB + spike;
  });
  const GrowthFit fit = fit_growth(s.steps, s.bytes);
  EXPECT_TRUE(fit.steady);
  EXPECT_EQ(fit.bytes_per_step, 8.0 * MiB);
}

TEST(GrowthFit, ShrinkingMemoryIsNotALeak) {
  const Series s = make_series(30, [](int k) { return 4_GiB - k * 16_MiB; });
  EXPECT_EQ(first_steady_prefix(s), -1);
}

TEST(GrowthFit, BadInputIsAClearError) {
  EXPECT_THROW(fit_growth({0, 1}, {5}), std::invalid_argument);
  EXPECT_THROW(fit_growth({0, 2, 1}, {5, 5, 5}), std::invalid_argument);
  GrowthCriteria too_small;
  too_small.window = 6;  // 6 - 4 + 1 < 8 floor points: could never decide
  EXPECT_THROW(fit_growth({}, {}, too_small), std::invalid_argument);
  GrowthCriteria zero_rate;
  zero_rate.min_bytes_per_step = 0;
  EXPECT_THROW(fit_growth({}, {}, zero_rate), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::leak
