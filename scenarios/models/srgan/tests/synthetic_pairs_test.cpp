// The synthetic image pairs: seeded, image-like (not flat, with edges), low = box average of high.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/tags.hpp"
#include "kernels/core/host_values.hpp"
#include "scenarios/models/srgan/synthetic_pairs.hpp"

namespace oomlab::srgan {
namespace {

TEST(SyntheticPairs, ImagesAreSeededAndStructured) {
  const std::vector<float> a = synthetic_image(1, 64), b = synthetic_image(1, 64), c = synthetic_image(2, 64);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_GE(*std::min_element(a.begin(), a.end()), 0.0f);
  EXPECT_LE(*std::max_element(a.begin(), a.end()), 1.0f);
  const double mean = std::accumulate(a.begin(), a.end(), 0.0) / a.size();
  double variance = 0, largest_step = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    variance += (a[i] - mean) * (a[i] - mean) / a.size();
    if (i >= 3) largest_step = std::max(largest_step, double(std::fabs(a[i] - a[i - 3])));  // next pixel
  }
  EXPECT_GT(variance, 1e-3);     // not flat
  EXPECT_GT(largest_step, 0.2);  // sharp edges somewhere
}

TEST(SyntheticPairs, LowResolutionIsTheBoxAverageOfHighResolution) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  SyntheticPairs pairs(3, 4);
  const ImageBatch batch = pairs.batch(device, 2, 0, DType::f32);
  ASSERT_EQ(batch.low_res.shape(), (Shape{2, 4, 4, 3}));
  ASSERT_EQ(batch.high_res.shape(), (Shape{2, 16, 16, 3}));
  EXPECT_EQ(batch.low_res.tag(), memory::Tag::data);
  EXPECT_EQ(batch.high_res.tag(), memory::Tag::data);
  const std::vector<float> high = batch.high_res.to_host_f32(), low = batch.low_res.to_host_f32();
  float sum = 0;  // low[0, 1, 2, c=1] is the mean of high[0, 4..7, 8..11, 1]
  for (int y = 4; y < 8; ++y)
    for (int x = 8; x < 12; ++x) sum += high[(y * 16 + x) * 3 + 1];
  EXPECT_NEAR(low[(1 * 4 + 2) * 3 + 1], sum / 16, 1e-6);
  // Same index, same images; another index, other images.
  EXPECT_EQ(pairs.batch(device, 2, 0, DType::f32).high_res.to_host_f32(), high);
  EXPECT_NE(pairs.batch(device, 2, 1, DType::f32).high_res.to_host_f32(), high);
}

TEST(SyntheticPairs, PrefetchedBatchesEqualTheOnesMadeOnDemand) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  SyntheticPairs on_demand(9, 8), prefetched(9, 8);
  const std::vector<float> batch3 = on_demand.batch(device, 3, 5, DType::f32).high_res.to_host_f32();
  prefetched.prefetch(device, 3, 5, DType::f32);
  EXPECT_EQ(prefetched.batch(device, 3, 5, DType::f32).high_res.to_host_f32(), batch3);
  // A prefetch for another batch is not used for this one.
  prefetched.prefetch(device, 3, 6, DType::f32);
  EXPECT_EQ(prefetched.batch(device, 3, 5, DType::f32).high_res.to_host_f32(), batch3);
  prefetched.prefetch(device, 2, 5, DType::f32);
  EXPECT_EQ(prefetched.batch(device, 3, 5, DType::f32).low_res.to_host_f32(),
            on_demand.batch(device, 3, 5, DType::f32).low_res.to_host_f32());
  // A prefetch in another dtype is not used either; a bf16 batch holds the f32 pixels rounded.
  prefetched.prefetch(device, 3, 5, DType::bf16);
  EXPECT_EQ(prefetched.batch(device, 3, 5, DType::f32).high_res.to_host_f32(), batch3);
  prefetched.prefetch(device, 3, 5, DType::bf16);
  const std::vector<float> bf16 = prefetched.batch(device, 3, 5, DType::bf16).high_res.to_host_f32();
  ASSERT_EQ(bf16.size(), batch3.size());
  for (std::size_t i = 0; i < bf16.size(); ++i) ASSERT_EQ(bf16[i], round_to_dtype(batch3[i], DType::bf16)) << i;
  // Destroyed with a prefetch in flight: waits for it.
  SyntheticPairs abandoned(9, 8);
  abandoned.prefetch(device, 4, 0, DType::f32);
}

TEST(SyntheticPairs, RejectsBadSizes) {
  EXPECT_THROW(SyntheticPairs(1, 0), std::invalid_argument);
  EXPECT_THROW(box_downsample(std::vector<float>(10 * 10 * 3), 1, 10, 4), std::invalid_argument);
  Device device(DeviceKind::dry, memory::AllocatorConfig{});
  EXPECT_THROW(SyntheticPairs(1, 4).batch(device, 0, 0, DType::f32), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::srgan
