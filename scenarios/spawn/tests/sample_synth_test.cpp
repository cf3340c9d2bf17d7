#include "scenarios/spawn/sample_synth.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace oomlab::scenarios {
namespace {

std::vector<float> sample(const ImageSpec& spec, std::uint64_t seed, std::int64_t id) {
  std::vector<float> out(spec.floats_per_sample());
  synthesize_sample(spec, seed, id, out.data());
  return out;
}

TEST(SampleSynth, SameSeedAndIdGiveTheSameBits) {
  const ImageSpec spec{40, 32, 3};
  EXPECT_EQ(sample(spec, 1, 5), sample(spec, 1, 5));
  EXPECT_NE(sample(spec, 1, 5), sample(spec, 1, 6));
  EXPECT_NE(sample(spec, 1, 5), sample(spec, 2, 5));
}

TEST(SampleSynth, ValuesAreNormalisedPixels) {
  const ImageSpec spec{40, 32, 3};
  const auto values = sample(spec, 3, 11);
  double sum = 0;
  for (float v : values) {
    ASSERT_TRUE(std::isfinite(v));
    // (p/255 - mean) / std with p in [0, 255] lies in about [-2.2, 2.7].
    ASSERT_GE(v, -2.2f);
    ASSERT_LE(v, 2.7f);
    sum += v;
  }
  EXPECT_GT(sum * sum, 0.0);  // not a constant image
}

TEST(SampleSynth, BadSpecsThrow) {
  std::vector<float> out(64 * 64 * 3);
  EXPECT_THROW(synthesize_sample({32, 64, 3}, 0, 0, out.data()), std::invalid_argument);
  EXPECT_THROW(synthesize_sample({32, 0, 3}, 0, 0, out.data()), std::invalid_argument);
  EXPECT_THROW(synthesize_sample({32, 16, 0}, 0, 0, out.data()), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::scenarios
