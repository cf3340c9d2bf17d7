// Replays of real snapshots, recorded by PyTorch itself on the GPU machine
// (record/record_snapshots.py; fixtures/torch/manifest-<torch>.json lists them with what PyTorch
// reported). Every manifest in the folder is checked, so fixtures of a newer PyTorch are covered
// as soon as they are committed:
//   - each replays with zero divergent segment decisions and PyTorch's reserved peak, exactly;
//   - a run that failed fails at the same request (the budget is the one the run had), a run that
//     fit fits, with PyTorch's reserved and allocated peaks;
//   - the what-if of an OOM run agrees with PyTorch's own runs under each setting (whatif.json).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/replay/replay_report.hpp"
#include "harness/replay/snapshot_file.hpp"
#include "harness/replay/tests/fixture_files.hpp"

namespace oomlab::replay {
namespace {

using namespace oomlab::replay::testing;
namespace fs = std::filesystem;

const fs::path kTorchFixtures = fs::path(OOMLAB_REPLAY_FIXTURES) / "torch";

nlohmann::json read_json(const fs::path& path) {
  std::ifstream file(path);
  return nlohmann::json::parse(file);
}

std::vector<fs::path> manifests() {
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(kTorchFixtures)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("manifest-", 0) == 0 && entry.path().extension() == ".json") found.push_back(entry.path());
  }
  return found;
}

ReplayReport analyse(const fs::path& file, const ReplayRequest& request = {}) {
  return analyse_snapshot(load_snapshot(file.string()), request);
}

// The 1-based index of the request that failed, counted as the recording script counts them.
std::size_t failed_request(const ReplayReport& report) {
  const std::size_t event = report.fidelity.ooms.at(0).event;
  std::size_t requests = 0;
  for (std::size_t i = 0; i < event; ++i) requests += report.events.events[i].kind == ReplayEventKind::alloc;
  return requests + 1;
}

std::string budget_of(const nlohmann::json& manifest) {
  return std::to_string(manifest.at("budget_mib").get<int>()) + "MiB";
}

TEST(TorchSnapshots, ThereAreRealFixtures) {
  ASSERT_FALSE(manifests().empty()) << "no manifest-*.json in " << kTorchFixtures;
}

TEST(TorchSnapshots, EveryOneReplaysPyTorchsSegmentDecisionsAndPeakExactly) {
  for (const fs::path& path : manifests()) {
    const nlohmann::json manifest = read_json(path);
    for (const auto& [name, fixture] : manifest.at("fixtures").items()) {
      SCOPED_TRACE(name);
      const ReplayReport report = analyse(kTorchFixtures / fixture.at("file").get<std::string>());
      EXPECT_EQ(report.fidelity.divergent_events, 0u)
          << (report.fidelity.first_divergence ? report.fidelity.first_divergence->request : "");
      EXPECT_GT(report.fidelity.requests, 0u);
      EXPECT_EQ(report.fidelity.peak_reserved, report.pytorch_peak_reserved);
      EXPECT_TRUE(report.reproduces_pytorch());
      const nlohmann::json& outcome = fixture.at("outcome");
      if (outcome.is_null()) continue;
      // The run's own numbers, from torch.cuda.memory_stats() at its end.
      EXPECT_EQ(report.fidelity.peak_reserved, outcome.at("peak_reserved").get<std::uint64_t>());
      EXPECT_EQ(report.need_allocated, outcome.at("peak_allocated").get<std::uint64_t>());
    }
  }
}

// pytorch_peaks: torch.cuda.memory_stats() at the run's end. With the cap inferred (the
// recording's cap is not in the snapshot), both peaks are PyTorch's to the byte: allocated bytes
// fall at free_requested (record_stream), private pools keep their own segments.
TEST(TorchSnapshots, EveryRunsAllocatedAndReservedPeaksArePyTorchsToTheByte) {
  for (const fs::path& path : manifests()) {
    const nlohmann::json manifest = read_json(path);
    for (const auto& [name, fixture] : manifest.at("fixtures").items()) {
      if (!fixture.contains("pytorch_peaks")) continue;
      SCOPED_TRACE(name);
      const nlohmann::json& peaks = fixture.at("pytorch_peaks");
      const ReplayReport report = analyse(kTorchFixtures / fixture.at("file").get<std::string>());
      EXPECT_EQ(report.fidelity.divergent_events, 0u);
      EXPECT_EQ(report.fidelity.peak_reserved, peaks.at("peak_reserved").get<std::uint64_t>());
      EXPECT_EQ(report.fidelity.peak_allocated, peaks.at("peak_allocated").get<std::uint64_t>());
      EXPECT_EQ(report.fidelity.pytorch_ooms, peaks.at("num_ooms").get<std::size_t>());
    }
  }
}

// gc_threshold_no_cap ran under set_per_process_memory_fraction's 1024 MiB, which the snapshot
// does not record: the inferred cap and the real one both replay it exactly.
TEST(TorchSnapshots, GarbageCollectionUnderTheRealCapReplaysExactlyToo) {
  ReplayRequest request;
  request.budget = "1024MiB";
  const ReplayReport report = analyse(kTorchFixtures / "gc_threshold_no_cap-torch2.11.0_cu130.pickle.gz", request);
  EXPECT_EQ(report.fidelity.divergent_events, 0u);
  EXPECT_EQ(report.fidelity.peak_reserved, 599785472u);
  EXPECT_EQ(report.fidelity.peak_allocated, 599785472u);
}

const PoolUsage* pool_named(const ReplayResult& result, const std::string& name) {
  for (const PoolUsage& pool : result.pools) {
    if (pool.name == name) return &pool;
  }
  return nullptr;
}

TEST(TorchSnapshots, CudaGraphsPrivatePoolIsReportedApartFromTheDefaultPool) {
  const ReplayReport report = analyse(kTorchFixtures / "compile_cuda_graphs-torch2.11.0_cu130.pickle.gz");
  const PoolUsage* graphs = pool_named(report.fidelity, "private (0, 1)");
  const PoolUsage* normal = pool_named(report.fidelity, "default");
  ASSERT_NE(graphs, nullptr);
  ASSERT_NE(normal, nullptr);
  // The snapshot's own segments by pool at its end: 2 + 2 + 32 + 60 MiB in the graph pool.
  EXPECT_EQ(graphs->reserved_at_end, 96u << 20);
  EXPECT_EQ(graphs->reserved_at_end + normal->reserved_at_end, 180u << 20);
}

TEST(TorchSnapshots, AMemPoolsBlocksAreNotReusedOutsideItAndGoWithThePool) {
  const ReplayReport report = analyse(kTorchFixtures / "mempool-torch2.11.0_cu130.pickle.gz");
  ASSERT_EQ(report.fidelity.pools.size(), 2u);  // released before the snapshot: inferred
  const PoolUsage& pool = report.fidelity.pools[1];
  EXPECT_NE(pool.name.find("inferred"), std::string::npos) << pool.name;
  EXPECT_EQ(pool.peak_reserved, 40u << 20);   // two 20 MiB segments: four 6 MiB blocks
  EXPECT_EQ(pool.peak_allocated, 24u << 20);
  EXPECT_EQ(pool.reserved_at_end, 0u);         // `del pool` released them
  EXPECT_EQ(report.fidelity.pools[0].peak_reserved, 20u << 20);
}

TEST(TorchSnapshots, AnOomRunFailsAtPyTorchsRequestUnderItsBudgetAndItsTwinFits) {
  for (const fs::path& path : manifests()) {
    const nlohmann::json manifest = read_json(path);
    ReplayRequest request;
    request.budget = budget_of(manifest);  // set_per_process_memory_fraction's cap
    for (const auto& [name, fixture] : manifest.at("fixtures").items()) {
      const nlohmann::json& outcome = fixture.at("outcome");
      if (outcome.is_null()) continue;
      SCOPED_TRACE(name);
      const ReplayReport report = analyse(kTorchFixtures / fixture.at("file").get<std::string>(), request);
      EXPECT_EQ(report.fidelity.divergent_events, 0u);
      EXPECT_EQ(report.fidelity.fits(), outcome.at("fits").get<bool>());
      if (outcome.at("fits").get<bool>()) continue;
      ASSERT_FALSE(report.fidelity.ooms.empty());
      EXPECT_TRUE(report.fidelity.ooms[0].pytorch_failed_too);
      EXPECT_EQ(failed_request(report), outcome.at("failed_request").get<std::size_t>());
      ASSERT_TRUE(report.oom.has_value());
      EXPECT_FALSE(report.oom->frames.empty()) << "the failing request's Python frames";
      // 414 MiB live of 920 MiB reserved, 160 MiB asked: the bytes fit, the holes do not.
      EXPECT_EQ(report.oom->info.diagnosis, memory::Diagnosis::fragmentation) << report.oom->message;
    }
  }
}

TEST(TorchSnapshots, WhatIfAgreesWithPyTorchsOwnRunsUnderEachSetting) {
  for (const fs::path& path : manifests()) {
    const nlohmann::json manifest = read_json(path);
    for (const auto& [name, fixture] : manifest.at("fixtures").items()) {
      const std::string file = fixture.at("file").get<std::string>();
      const fs::path whatif = kTorchFixtures / (file.substr(0, file.find(".pickle")) + ".whatif.json");
      if (!fs::exists(whatif)) continue;
      const nlohmann::json runs = read_json(whatif);
      std::size_t compared = 0;
      for (const nlohmann::json& run : runs.at("settings")) {
        // empty_cache() after the workload's del (no request marks it in the trace) is a
        // program change, not an allocator setting: the replay cannot place it.
        if (run.at("empty_cache_at_boundaries").get<bool>()) continue;
        SCOPED_TRACE(name + " under " + run.at("name").get<std::string>());
        ReplayRequest request;
        request.budget = std::to_string(runs.at("budget_mib").get<int>()) + "MiB";
        request.alloc_conf = run.at("alloc_conf").get<std::string>();
        const ReplayReport report = analyse(kTorchFixtures / file, request);
        EXPECT_EQ(report.fidelity.fits(), run.at("fits").get<bool>());
        EXPECT_EQ(report.fidelity.peak_reserved, run.at("peak_reserved").get<std::uint64_t>());
        if (!run.at("fits").get<bool>()) {
          EXPECT_EQ(failed_request(report), run.at("failed_request").get<std::size_t>());
        } else {
          EXPECT_EQ(report.fidelity.peak_allocated, run.at("peak_allocated").get<std::uint64_t>());
        }
        ++compared;
      }
      EXPECT_GE(compared, 5u) << whatif;
    }
  }
}

TEST(TorchSnapshots, TheSrganLeakIsFoundWithItsGrowthPerIterationAndItsSite) {
  const ReplayReport report = analyse(kTorchFixtures / "srgan_leak-torch2.11.0_cu130.pickle.gz");
  EXPECT_TRUE(report.phases.from_repetition);
  EXPECT_EQ(report.phases.boundaries.size() + 1, 4u);  // the script's four steps
  ASSERT_TRUE(report.growth.steady);
  // What the list keeps each step: the discriminator's first five layers' outputs and what their
  // graph saved (2 x 64 x 128^2 and 2 x 128 x 64^2 f32 maps): 29.5 MiB.
  EXPECT_NEAR(report.growth.bytes_per_step, 29.5 * (1 << 20), 0.5 * (1 << 20));
  ASSERT_FALSE(report.top_sites.empty());
  // The largest site at the peak is the line that appends to the list.
  EXPECT_NE(report.top_sites[0].site.find("record_snapshots.py:177 srgan_leak"), std::string::npos)
      << report.top_sites[0].site;
}

TEST(TorchSnapshots, TrainingLoopsWithoutALeakAreNotCalledOne) {
  for (const char* file : {"gpt2_124m_bf16_train-torch2.11.0_cu130.pickle.gz",
                           "inference_growing_seq-torch2.11.0_cu130.pickle.gz"}) {
    const ReplayReport report = analyse(kTorchFixtures / file);
    EXPECT_FALSE(report.growth.steady) << file;
  }
  const ReplayReport gpt2 = analyse(kTorchFixtures / "gpt2_124m_bf16_train-torch2.11.0_cu130.pickle.gz");
  EXPECT_TRUE(gpt2.phases.from_repetition);
  EXPECT_EQ(gpt2.phases.boundaries.size() + 1, 2u);  // two steps, not 24 layer calls
}

}  // namespace
}  // namespace oomlab::replay
