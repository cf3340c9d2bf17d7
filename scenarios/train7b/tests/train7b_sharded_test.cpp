// train7b's last rung, sharding (issue 22): on dry, N ranks each with its own allocator and budget
// (rank 0, the largest shard, is the record); the per-rank peak falls with N so that 2 GPUs hold
// what one H100 cannot and 8 fit RTX 4090-sized ranks; on host the ranks really exchange shards and
// train on the same batch as one GPU would (the same loss within bf16 reduction order); a rank's
// OOM ends the run (no rank waits forever); the knobs refuse what they cannot do in one line.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "harness/runner/knobs.hpp"
#include "harness/runner/runner.hpp"
#include "harness/runner/scenario.hpp"
#include "harness/testing/run_scenario.hpp"
#include "scenarios/models/transformer/nccl_group.hpp"

namespace oomlab {
namespace {

RunRecord run_train7b(const std::string& variant, DeviceKind device, Scale scale, const std::string& budget,
                      KnobSettings set = {}, int steps = 0) {
  RunRequest request = testing::quiet_request("train7b", variant, device, scale, budget, std::move(set));
  request.steps = steps;
  return run_variant_in_process(request);
}

RunRecord sharded_full(int gpus, const std::string& budget) {
  return run_train7b("sharded", DeviceKind::dry, Scale::full, budget,
                     {{"gpus", std::to_string(gpus)}, {"batch", std::to_string(gpus)}});
}

TEST(Train7bSharded, EachRankHolds16BytesPerParameterOverNPlusTheGatheredLayer) {
  const double gib = 1024.0 * 1024 * 1024;
  double previous = 1e30;
  for (int gpus : {1, 2, 8}) {
    const RunRecord run = sharded_full(gpus, "unlimited");
    ASSERT_EQ(run.outcome.status, OutcomeStatus::ok) << gpus;
    const double peak = static_cast<double>(run.memory.peak_allocated);
    // 16 bytes per parameter over N ranks, plus the layer gathered whole and the activations.
    EXPECT_NEAR(peak / gib, 16.0 * 6738415616.0 / gib / gpus, 2.5) << gpus;
    EXPECT_LT(peak, previous) << gpus;
    previous = peak;
    if (gpus > 1) {
      EXPECT_EQ(run.metrics.at("ranks"), gpus);
      EXPECT_LE(run.metrics.at("last_rank_peak_allocated"), peak);  // rank 0's shard is the largest
    }
  }
}

TEST(Train7bSharded, TwoGpusFitAnH100EachAndEightFitRtx4090SizedRanks) {
  EXPECT_EQ(run_train7b("broken", DeviceKind::dry, Scale::full, "h100-80g").outcome.status, OutcomeStatus::oom);
  EXPECT_EQ(sharded_full(1, "h100-80g").outcome.status, OutcomeStatus::oom);  // one GPU: bf16-mixed and more
  EXPECT_EQ(sharded_full(2, "h100-80g").outcome.status, OutcomeStatus::ok);
  EXPECT_EQ(sharded_full(2, "a100-40g").outcome.status, OutcomeStatus::oom);
  EXPECT_EQ(sharded_full(8, "rtx4090").outcome.status, OutcomeStatus::ok);
  const RunRecord story = run_train7b("sharded", DeviceKind::dry, Scale::full, "");
  EXPECT_TRUE(story.matches_expectation) << story.outcome.message;
}

TEST(Train7bSharded, TwoRanksOnHostTrainLikeOneGpuOnTheWholeBatch) {
  // The tiny model, the same 4 sequences: one rank with all of them, or two with two each.
  const RunRecord one = run_train7b("bf16-mixed", DeviceKind::host, Scale::tiny, "unlimited", {{"batch", "4"}}, 3);
  const RunRecord two = run_train7b("sharded", DeviceKind::host, Scale::tiny, "unlimited", {{"batch", "4"}}, 3);
  ASSERT_EQ(one.outcome.status, OutcomeStatus::ok) << one.outcome.message;
  ASSERT_EQ(two.outcome.status, OutcomeStatus::ok) << two.outcome.message;
  // The first loss is before any update: the same model on the same tokens, summed in another order.
  EXPECT_NEAR(two.metrics.at("first_loss"), one.metrics.at("first_loss"), 1e-5);
  // After two updates from averaged, bf16-rounded gradients: within bf16's reduction-order noise.
  EXPECT_NEAR(two.metrics.at("last_loss"), one.metrics.at("last_loss"), 2e-3);
  EXPECT_LT(two.metrics.at("last_loss"), two.metrics.at("first_loss"));
  EXPECT_LT(two.memory.peak_allocated, one.memory.peak_allocated);
}

TEST(Train7bSharded, OneRankIsTheUnshardedModelWithTheCollectivesRun) {
  // gpus=1: the gather is a copy and the reduce-scatter an add, so training is bf16-mixed's to
  // the bit; memory: bf16-mixed's plus the layer gathered whole.
  const RunRecord plain = run_train7b("bf16-mixed", DeviceKind::host, Scale::tiny, "unlimited", {}, 3);
  const RunRecord one = run_train7b("sharded", DeviceKind::host, Scale::tiny, "unlimited",
                                    {{"gpus", "1"}, {"batch", "2"}}, 3);
  ASSERT_EQ(one.outcome.status, OutcomeStatus::ok) << one.outcome.message;
  EXPECT_EQ(one.metrics.at("first_loss"), plain.metrics.at("first_loss"));
  EXPECT_EQ(one.metrics.at("last_loss"), plain.metrics.at("last_loss"));
  EXPECT_GT(one.memory.peak_allocated, plain.memory.peak_allocated);
}

TEST(Train7bSharded, HostRanksMakeTheRequestsDryPredicts) {
  const auto host = testing::run_scenario("train7b", "sharded", DeviceKind::host, Scale::tiny);
  const auto dry = testing::run_scenario("train7b", "sharded", DeviceKind::dry, Scale::tiny);
  ASSERT_FALSE(host.oom.has_value());
  ASSERT_EQ(host.events.size(), dry.events.size());
  for (std::size_t i = 0; i < host.events.size(); ++i) {
    ASSERT_TRUE(host.events[i].same_as(dry.events[i])) << "event " << i;
  }
}

TEST(Train7bSharded, AnOomOnEveryRankEndsTheRunWithoutWaiting) {
  for (DeviceKind device : {DeviceKind::dry, DeviceKind::host}) {
    const RunRecord run = run_train7b("sharded", device, Scale::tiny, "20MiB", {{"gpus", "4"}, {"batch", "4"}});
    EXPECT_EQ(run.outcome.status, OutcomeStatus::oom) << run.outcome.message;
  }
}

TEST(Train7bSharded, KnobsThatCannotShardAreOneLine) {
  const auto error_of = [](KnobSettings set) {
    return run_train7b("bf16-mixed", DeviceKind::dry, Scale::tiny, "", std::move(set)).outcome.message;
  };
  EXPECT_NE(error_of({{"gpus", "2"}}).find("set shard=true"), std::string::npos);
  EXPECT_NE(error_of({{"shard", "true"}, {"gpus", "3"}, {"batch", "4"}}).find("not a multiple of gpus=3"),
            std::string::npos);
  EXPECT_NE(error_of({{"shard", "true"}, {"dtype", "f16"}}).find("dtype=f16"), std::string::npos);
  EXPECT_NE(error_of({{"shard", "true"}, {"offload", "true"}}).find("offload"), std::string::npos);
  EXPECT_NE(run_train7b("sharded", DeviceKind::dry, Scale::tiny, "", {{"gpus", "1000"}, {"batch", "1000"}})
                .outcome.message.find("no rows"),
            std::string::npos);
}

TEST(Train7bSharded, CudaRanksNeedAGpuEachAndNccl) {
  const Scenario& scenario = *ScenarioRegistry::instance().find("train7b");
  const auto knobs = [&](KnobSettings set) {
    return resolve_knobs("train7b", scenario.knobs(), scenario.variant_knobs("sharded", Scale::full), set);
  };
  if (model::nccl_unavailable_reason().empty() && cuda_device_count() >= 2) {
    EXPECT_NO_THROW(scenario.check_device("sharded", Scale::full, DeviceKind::cuda, knobs({})));
  } else {
    try {
      scenario.check_device("sharded", Scale::full, DeviceKind::cuda, knobs({}));
      ADD_FAILURE() << "gpus=2 on cuda was accepted without NCCL or two GPUs";
    } catch (const NotOnThisDevice& e) {
      const std::string why = e.what();
      EXPECT_TRUE(why.find("gpus=2 needs 2 GPUs (one process each) and this machine has") != std::string::npos ||
                  why.find("gpus=2 runs one process per GPU with NCCL: ") != std::string::npos)
          << why;
      EXPECT_NE(why.find("--device dry"), std::string::npos) << why;
    }
  }
  // One rank runs on any GPU (through NCCL where it can be loaded, else its collectives are copies).
  EXPECT_NO_THROW(
      scenario.check_device("sharded", Scale::full, DeviceKind::cuda, knobs({{"gpus", "1"}, {"batch", "1"}})));
  EXPECT_NO_THROW(scenario.check_device("sharded", Scale::full, DeviceKind::dry, knobs({})));
  EXPECT_NO_THROW(scenario.check_device("sharded", Scale::full, DeviceKind::host, knobs({})));
}

}  // namespace
}  // namespace oomlab
