// SyntheticPairs on a GPU: batches are uploaded asynchronously from pinned stagings, and a
// staging is never rewritten while the copy reading it is still queued.
#include <gtest/gtest.h>

#include "harness/memory/alloc_config.hpp"
#include "harness/testing/require_gpu.hpp"
#include "scenarios/models/srgan/synthetic_pairs.hpp"
#include "scenarios/models/srgan/tests/busy_stream.hpp"
#include "scenarios/models/srgan/tests/staged_upload_check.hpp"

namespace oomlab::srgan {
namespace {

constexpr std::uint32_t kSeed = 17;
constexpr int kLowRes = 32;

TEST(SyntheticPairsGpu, AsyncUploadsEqualTheHostBatches) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, memory::AllocatorConfig{});
  SyntheticPairs pairs(kSeed, kLowRes);
  for (DType dtype : {DType::f32, DType::bf16}) {
    // Batch 0 on demand, then the training loop's pattern: batch i, prefetch i+1.
    for (std::int64_t index = 0; index < 4; ++index) {
      const ImageBatch batch = pairs.batch(device, 3, index, dtype);
      pairs.prefetch(device, 3, index + 1, dtype);
      expect_batch_is_host_batch(batch, kSeed, kLowRes, 3, index, dtype);
    }
  }
}

TEST(SyntheticPairsGpu, StagingIsNotRewrittenWhileItsUploadIsQueued) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, memory::AllocatorConfig{});
  SyntheticPairs pairs(kSeed, kLowRes);
  pairs.prefetch(device, 2, 0, DType::bf16);  // into staging A
  occupy_stream(device);
  const ImageBatch first = pairs.batch(device, 2, 0, DType::bf16);  // queued behind the fills
  // Batch 1 goes to staging B; batch 2 comes back to A, whose upload is still queued: the
  // claim must wait for it, or `first` would receive batch 2's pixels.
  pairs.prefetch(device, 2, 1, DType::bf16);
  pairs.prefetch(device, 2, 2, DType::bf16);
  const ImageBatch third = pairs.batch(device, 2, 2, DType::bf16);
  expect_batch_is_host_batch(first, kSeed, kLowRes, 2, 0, DType::bf16);
  expect_batch_is_host_batch(third, kSeed, kLowRes, 2, 2, DType::bf16);
}

// Destroyed right after an upload was queued: the pinned staging outlives the copy.
TEST(SyntheticPairsGpu, DestroyedWithAnUploadQueued) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, memory::AllocatorConfig{});
  ImageBatch batch;
  {
    SyntheticPairs pairs(kSeed, kLowRes);
    occupy_stream(device);
    batch = pairs.batch(device, 2, 7, DType::f32);
    pairs.prefetch(device, 2, 8, DType::f32);
  }
  expect_batch_is_host_batch(batch, kSeed, kLowRes, 2, 7, DType::f32);
}

}  // namespace
}  // namespace oomlab::srgan
