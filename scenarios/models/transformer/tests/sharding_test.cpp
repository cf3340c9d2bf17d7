// The pieces of sharding: every row held by exactly one rank, the last taking the remainder; the
// collectives of three host ranks against what the arithmetic says; a failing rank's abort
// waking the others.
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "harness/device/device.hpp"
#include "scenarios/models/transformer/communicator.hpp"
#include "scenarios/models/transformer/sharding.hpp"

namespace oomlab::model {
namespace {

TEST(Sharding, EveryRowBelongsToOneRankInOrder) {
  for (std::int64_t rows = 1; rows <= 40; ++rows) {
    for (int ranks = 1; ranks <= 9; ++ranks) {
      std::int64_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const RowRange range = shard_rows(rows, r, ranks);
        EXPECT_EQ(range.begin, next) << rows << " rows, rank " << r << " of " << ranks;
        EXPECT_LE(range.count, shard_rows(rows, 0, ranks).count);  // rank 0's is the largest
        next += range.count;
      }
      EXPECT_EQ(next, rows) << rows << " rows over " << ranks;
    }
  }
  EXPECT_EQ(shard_shape({10, 4}, 2, 3), (Shape{2, 4}));  // 4, 4, 2
}

TEST(Sharding, ThreeHostRanksGatherAndAverage) {
  constexpr int kRanks = 3;
  Communicator communicator(kRanks);
  std::vector<std::unique_ptr<Device>> devices;
  for (int r = 0; r < kRanks; ++r)
    devices.push_back(std::make_unique<Device>(DeviceKind::host, memory::AllocatorConfig{}));
  const Shape piece{7, 2};  // rows 3, 3, 1
  std::vector<std::vector<float>> gathered(kRanks), reduced(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      Device& device = *devices[static_cast<std::size_t>(r)];
      const ShardGroup group{r, kRanks, &communicator};
      const RowRange rows = shard_rows(piece[0], r, kRanks);
      std::vector<float> mine;
      for (std::int64_t i = rows.begin * 2; i < (rows.begin + rows.count) * 2; ++i) mine.push_back(float(i));
      Tensor shard = Tensor::from_host(device, shard_shape(piece, r, kRanks), DType::f32, mine);
      Tensor full = Tensor::zeros(device, piece, DType::f32);
      all_gather(full, shard, group);
      gathered[static_cast<std::size_t>(r)] = full.to_host_f32();
      // Each rank's gradient is (rank + 1) everywhere: the mean is 2; added to the shard's values.
      Tensor grad = Tensor::from_host(device, piece, DType::f32, std::vector<float>(14, float(r + 1)));
      reduce_scatter_mean_add(shard, grad, group);
      reduced[static_cast<std::size_t>(r)] = shard.to_host_f32();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int r = 0; r < kRanks; ++r) {
    const auto& full = gathered[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < full.size(); ++i) EXPECT_EQ(full[i], float(i)) << "rank " << r;
    const RowRange rows = shard_rows(piece[0], r, kRanks);
    const auto& shard = reduced[static_cast<std::size_t>(r)];
    ASSERT_EQ(shard.size(), static_cast<std::size_t>(rows.count * 2));
    for (std::size_t i = 0; i < shard.size(); ++i) EXPECT_EQ(shard[i], float(rows.begin * 2 + i) + 2.0f);
  }
}

TEST(Sharding, AnAbortWakesTheRanksWaiting) {
  Communicator communicator(3);
  std::vector<int> woken(2, 0);
  std::vector<std::thread> waiting;
  for (int r = 0; r < 2; ++r) {
    waiting.emplace_back([&, r] {
      try {
        communicator.barrier();
      } catch (const CommunicatorAborted&) {
        woken[static_cast<std::size_t>(r)] = 1;
      }
    });
  }
  communicator.abort();  // the third rank failed before its barrier
  for (std::thread& thread : waiting) thread.join();
  EXPECT_EQ(woken, (std::vector<int>{1, 1}));
  EXPECT_THROW(communicator.barrier(), CommunicatorAborted);
}

}  // namespace
}  // namespace oomlab::model
