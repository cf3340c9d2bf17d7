// The synthetic image pairs: seeded, image-like (not flat, with edges), low = box average of high.
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include <gtest/gtest.h>

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/tags.hpp"
#include "kernels/core/host_values.hpp"
#include "scenarios/models/srgan/synthetic_pairs.hpp"
#include "scenarios/models/srgan/tests/staged_upload_check.hpp"

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
  EXPECT_EQ(box_downsample(high, 2, 16, 4), low);  // every pixel, each row made by its own task
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

// A training loop's pattern (batch i, then prefetch i+1) cycles the two stagings; a size or
// dtype change grows or reuses them; a batch nobody prefetched is rendered on demand. Every
// batch holds exactly host_batch's bytes.
TEST(SyntheticPairs, StagedUploadsHoldTheHostBatchBytes) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  SyntheticPairs pairs(11, 8);
  struct Request { int batch_size; std::int64_t index; DType dtype; };
  const std::vector<Request> requests = {{2, 0, DType::bf16}, {2, 1, DType::bf16}, {2, 2, DType::bf16},
                                         {4, 3, DType::bf16}, {4, 4, DType::f32},  {1, 5, DType::f32},
                                         {3, 6, DType::f16}};
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    const ImageBatch batch = pairs.batch(device, r.batch_size, r.index, r.dtype);
    if (i + 1 < requests.size() && i != 4) {  // batch 5 is made on demand
      pairs.prefetch(device, requests[i + 1].batch_size, requests[i + 1].index, requests[i + 1].dtype);
    }
    expect_batch_is_host_batch(batch, 11, 8, r.batch_size, r.index, r.dtype);
  }
}

// Staging memory is host memory, not the device's: prefetching leaves the allocator's event
// sequence as it was, and host and dry see the same one (the dry predictions stay exact).
TEST(SyntheticPairs, StagingLeavesTheDeviceAllocationsUnchanged) {
  auto run = [](DeviceKind kind, bool prefetch) {
    auto device = std::make_unique<Device>(kind, memory::AllocatorConfig{});
    SyntheticPairs pairs(5, 8);
    for (int step = 0; step < 4; ++step) {
      const ImageBatch batch = pairs.batch(*device, 2 + step % 2, step, DType::bf16);
      if (prefetch) pairs.prefetch(*device, 2 + (step + 1) % 2, step + 1, DType::bf16);
    }
    return device;
  };
  const auto on_demand = run(DeviceKind::host, false), prefetched = run(DeviceKind::host, true),
             dry = run(DeviceKind::dry, true);
  const auto& want = on_demand->allocator().trace().events();
  ASSERT_GE(want.size(), 16u);
  for (Device* device : {prefetched.get(), dry.get()}) {
    const auto& got = device->allocator().trace().events();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(got[i].same_as(want[i])) << "event " << i;
  }
}

// What batch() cost the caller: on demand it rendered (the wait is the render); prefetched it
// waited at most for the worker's rest; dry renders nothing.
TEST(SyntheticPairs, BatchTimingSaysWhereThePixelsCameFrom) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  SyntheticPairs pairs(4, 16);
  pairs.batch(device, 2, 0, DType::f32);
  const SyntheticPairs::BatchTiming on_demand = pairs.last_timing();
  EXPECT_FALSE(on_demand.prefetched);
  EXPECT_GT(on_demand.render_ms, 0.0);
  EXPECT_GE(on_demand.wait_ms, on_demand.render_ms);
  pairs.prefetch(device, 2, 1, DType::f32);
  pairs.batch(device, 2, 1, DType::f32);
  const SyntheticPairs::BatchTiming prefetched = pairs.last_timing();
  EXPECT_TRUE(prefetched.prefetched);
  EXPECT_GT(prefetched.render_ms, 0.0);
  EXPECT_GE(prefetched.wait_ms, 0.0);
  Device dry(DeviceKind::dry, memory::AllocatorConfig{});
  pairs.batch(dry, 2, 2, DType::f32);
  EXPECT_FALSE(pairs.last_timing().prefetched);
  EXPECT_EQ(pairs.last_timing().wait_ms, 0.0);
  EXPECT_EQ(pairs.last_timing().render_ms, 0.0);
}

TEST(SyntheticPairs, RejectsBadSizes) {
  EXPECT_THROW(SyntheticPairs(1, 0), std::invalid_argument);
  EXPECT_THROW(box_downsample(std::vector<float>(10 * 10 * 3), 1, 10, 4), std::invalid_argument);
  Device device(DeviceKind::dry, memory::AllocatorConfig{});
  EXPECT_THROW(SyntheticPairs(1, 4).batch(device, 0, 0, DType::f32), std::invalid_argument);
  Device host(DeviceKind::host, memory::AllocatorConfig{});
  EXPECT_THROW(SyntheticPairs(1, 4).prefetch(host, -1, 0, DType::f32), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::srgan
