// train7b on a GPU: at small scale every rung's outcome and every allocator request equal dry's;
// at full scale (the real 7B shapes, two steps, the H200's budget) the fitting rungs' cuda
// allocator peaks equal dry's to the byte, and every one of them trains (a finite loss).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "harness/runner/knobs.hpp"
#include "harness/runner/runner.hpp"
#include "harness/testing/require_gpu.hpp"
#include "harness/testing/run_scenario.hpp"
#include "scenarios/models/transformer/nccl_group.hpp"

namespace oomlab {
namespace {

using testing::run_scenario;

TEST(Train7bGpu, SmallScaleOutcomesAndRequestsEqualDry) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"broken", "bf16-mixed", "8bit-adam", "offload", "lora", "int8-lora"}) {
    const auto cuda = run_scenario("train7b", variant, DeviceKind::cuda, Scale::small);
    const auto dry = run_scenario("train7b", variant, DeviceKind::dry, Scale::small);
    EXPECT_EQ(cuda.oom.has_value(), dry.oom.has_value()) << variant;
    EXPECT_EQ(cuda.stats.allocated.peak, dry.stats.allocated.peak) << variant;
    ASSERT_EQ(cuda.events.size(), dry.events.size()) << variant;
    for (std::size_t i = 0; i < cuda.events.size(); ++i) {
      ASSERT_TRUE(cuda.events[i].same_as(dry.events[i])) << variant << " event " << i;
    }
  }
}

TEST(Train7bGpu, FullScalePeaksEqualDryToTheByte) {
  OOMLAB_REQUIRE_GPU();
  for (const char* variant : {"bf16-mixed", "8bit-adam", "offload", "lora", "int8-lora"}) {
    const auto cuda = run_scenario("train7b", variant, DeviceKind::cuda, Scale::full, "h200");
    const auto dry = run_scenario("train7b", variant, DeviceKind::dry, Scale::full, "h200");
    ASSERT_FALSE(cuda.oom.has_value()) << variant;
    EXPECT_EQ(cuda.stats.allocated.peak, dry.stats.allocated.peak) << variant;
    EXPECT_EQ(cuda.stats.reserved.peak, dry.stats.reserved.peak) << variant;
    EXPECT_TRUE(std::isfinite(cuda.metrics.at("last_loss"))) << variant;
  }
}

RunRecord run_train7b(const std::string& variant, DeviceKind device, Scale scale, KnobSettings set, bool profile) {
  // small: unlimited, the story's 140 MiB is for bf16-mixed's OOM
  RunRequest request = testing::quiet_request("train7b", variant, device, scale,
                                              scale == Scale::full ? "h200" : "unlimited", std::move(set));
  request.profile = profile;
  return run_variant_in_process(request);
}

// The Hub's models (issue 34): grouped-query attention (Llama 3, Mistral, Qwen2.5's biases), the
// 128k/152k vocabularies, QLoRA's nf4 base, each LoRA r16 at full scale: the cuda allocator's
// peaks equal dry's to the byte and the model trains (a finite loss).
TEST(Train7bGpu, HubModelsPeakAsDryAndTrain) {
  OOMLAB_REQUIRE_GPU();
  for (const char* set : {"model=llama-3-8b", "model=llama-3-8b,quantize_base=nf4", "model=mistral-7b",
                          "model=qwen2.5-7b,quantize_base=nf4", "model=llama-2-7b,quantize_base=nf4"}) {
    const RunRecord cuda = run_train7b("lora", DeviceKind::cuda, Scale::full, parse_knob_settings(set), false);
    const RunRecord dry = run_train7b("lora", DeviceKind::dry, Scale::full, parse_knob_settings(set), false);
    ASSERT_EQ(cuda.outcome.status, OutcomeStatus::ok) << set << ": " << cuda.outcome.message;
    EXPECT_EQ(cuda.memory.peak_allocated, dry.memory.peak_allocated) << set;
    EXPECT_EQ(cuda.memory.peak_reserved, dry.memory.peak_reserved) << set;
    EXPECT_TRUE(std::isfinite(cuda.metrics.at("last_loss"))) << set;
    std::printf("%s: peak %llu, %.0f tokens/s\n", set, static_cast<unsigned long long>(cuda.memory.peak_allocated),
                cuda.throughput.value);
  }
}

// Sharded over one GPU, a world of one through NCCL (issue 22): the collectives run (all-gather,
// reduce-scatter, all-reduce of the norm) on oomlab's buffers, the allocator's peaks equal dry's
// to the byte, and it trains as bf16-mixed does on the same batch.
TEST(Train7bGpu, ShardedOverOneGpuThroughNcclPeaksEqualDryAndTrainsAsBf16Mixed) {
  OOMLAB_REQUIRE_GPU();
  if (!model::nccl_unavailable_reason().empty()) GTEST_SKIP() << model::nccl_unavailable_reason();
  const Scenario& scenario = *ScenarioRegistry::instance().find("train7b");
  for (Scale scale : {Scale::small, Scale::full}) {
    const std::string batch = scenario.variant_knobs("bf16-mixed", scale).at("batch");
    const KnobSettings one_gpu{{"gpus", "1"}, {"batch", batch}};
    const RunRecord cuda = run_train7b("sharded", DeviceKind::cuda, scale, one_gpu, true);
    const RunRecord dry = run_train7b("sharded", DeviceKind::dry, scale, one_gpu, false);
    const std::string name = scale_name(scale);
    ASSERT_EQ(cuda.outcome.status, OutcomeStatus::ok) << name << ": " << cuda.outcome.message;
    EXPECT_EQ(cuda.memory.peak_allocated, dry.memory.peak_allocated) << name;
    EXPECT_EQ(cuda.memory.peak_reserved, dry.memory.peak_reserved) << name;
    EXPECT_GT(cuda.metrics.at("profile_ms.all_gather"), 0) << name;
    EXPECT_GT(cuda.metrics.at("profile_ms.reduce_scatter"), 0) << name;
    EXPECT_GE(cuda.metrics.at("nccl_external_bytes"), 0) << name;
    if (scale == Scale::small) {
      const RunRecord whole = run_train7b("bf16-mixed", DeviceKind::cuda, scale, {}, false);
      EXPECT_EQ(cuda.metrics.at("first_loss"), whole.metrics.at("first_loss"));
      EXPECT_NEAR(cuda.metrics.at("last_loss"), whole.metrics.at("last_loss"), 1e-3 * whole.metrics.at("last_loss"));
    }
  }
}

// Two GPUs, each rank a process on its own (needs a machine with two; skipped here otherwise):
// rank 0's and the last rank's peaks equal dry's, and the two ranks on the whole batch train as one
// GPU does on it (each rank's loss is over its half; the run's is their mean).
TEST(Train7bGpu, TwoRanksOnTwoGpusPeakAsDryAndTrainAsOneGpuOnTheBatch) {
  OOMLAB_REQUIRE_GPU();
  if (!model::nccl_unavailable_reason().empty()) GTEST_SKIP() << model::nccl_unavailable_reason();
  if (cuda_device_count() < 2) GTEST_SKIP() << "needs two GPUs; this machine has " << cuda_device_count();
  const KnobSettings two_gpus{{"gpus", "2"}, {"batch", "2"}};
  const RunRecord cuda = run_train7b("sharded", DeviceKind::cuda, Scale::small, two_gpus, true);
  const RunRecord dry = run_train7b("sharded", DeviceKind::dry, Scale::small, two_gpus, false);
  const RunRecord one = run_train7b("sharded", DeviceKind::cuda, Scale::small, {{"gpus", "1"}, {"batch", "2"}}, false);
  ASSERT_EQ(cuda.outcome.status, OutcomeStatus::ok) << cuda.outcome.message;
  ASSERT_EQ(one.outcome.status, OutcomeStatus::ok) << one.outcome.message;
  EXPECT_EQ(cuda.metrics.at("ranks"), 2);
  EXPECT_EQ(cuda.memory.peak_allocated, dry.memory.peak_allocated);
  EXPECT_EQ(cuda.memory.peak_reserved, dry.memory.peak_reserved);
  EXPECT_EQ(cuda.metrics.at("last_rank_peak_allocated"), dry.metrics.at("last_rank_peak_allocated"));
  EXPECT_GT(cuda.metrics.at("profile_ms.all_gather"), 0);
  const double first = one.metrics.at("first_loss"), last = one.metrics.at("last_loss");
  EXPECT_NEAR(cuda.metrics.at("first_loss"), first, 1e-4 * first);  // the same weights and batch
  EXPECT_NEAR(cuda.metrics.at("last_loss"), last, 1e-2 * last);      // bf16 sums in another order
  std::printf("two GPUs: first loss %.7f (one GPU %.7f), last %.7f (%.7f)\n", cuda.metrics.at("first_loss"), first,
              cuda.metrics.at("last_loss"), last);
}

// Ranks 1..N-1 are processes: rank 0 starts rank 1 through the runner, here on a GPU it cannot use
// (`bad_gpu`: one that is not there, or this process's own, which NCCL refuses to share between
// ranks). However rank 1 fails, before joining or while joining, the run ends at once and names
// what went wrong; rank 1's process is gone with it.
std::string sharded_run_with_rank1_on(const std::string& bad_gpu) {
  const Scenario& scenario = *ScenarioRegistry::instance().find("train7b");
  const RunRequest request = testing::quiet_request("train7b", "sharded", DeviceKind::cuda, Scale::small,
                                                    "unlimited", {{"gpus", "2"}, {"batch", "2"}});
  memory::AllocatorConfig config;
  scenario.configure("sharded", Scale::small, config);
  Device device(DeviceKind::cuda, config);  // this process's CUDA is up: the variable below is rank 1's
  RunContext context(device, Scale::small, 2,
                     resolve_knobs("train7b", scenario.knobs(), scenario.variant_knobs("sharded", Scale::small),
                                   request.set));
  context.set_quiet(true);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string saved = visible ? visible : "";
  context.set_rank_launcher([&](int rank, const std::string& id) {
    ::setenv("CUDA_VISIBLE_DEVICES", ("0," + bad_gpu).c_str(), 1);  // rank 1: the second listed
    std::unique_ptr<RankProcess> process = launch_rank_process(request, rank, id);
    if (visible) ::setenv("CUDA_VISIBLE_DEVICES", saved.c_str(), 1);
    else ::unsetenv("CUDA_VISIBLE_DEVICES");
    return process;
  });
  try {
    scenario.run("sharded", context);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Train7bGpu, AShardedRunEndsAtOnceNamingWhyWhenARankCannotRun) {
  OOMLAB_REQUIRE_GPU();
  if (!model::nccl_unavailable_reason().empty()) GTEST_SKIP() << model::nccl_unavailable_reason();
  const auto start = std::chrono::steady_clock::now();
  // No such GPU: rank 1 ends before it joins; rank 0's watch aborts the communicator it waits on.
  const std::string missing = sharded_run_with_rank1_on("63");
  EXPECT_NE(missing.find("rank 1 of 2 error"), std::string::npos) << missing;
  EXPECT_NE(missing.find("(the run stopped)"), std::string::npos) << missing;
  // This GPU again: both ranks join and NCCL refuses two ranks on one GPU, in one line.
  const std::string shared = sharded_run_with_rank1_on("0");
  EXPECT_NE(shared.find("Duplicate GPU"), std::string::npos) << shared;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(120));
  std::printf("rank 1 on a missing GPU: %s\nrank 1 on rank 0's GPU: %s\n", missing.c_str(), shared.c_str());
}

}  // namespace
}  // namespace oomlab
