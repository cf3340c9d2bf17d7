// Growth between iterations: a leak when the program never gives it back (srgan_leak, a real
// one), not a leak when it is released while the program still holds its model (a KV cache
// growing one token per generate step, freed when generation ends).
#include "harness/replay/phases_growth.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "harness/memory/size.hpp"
#include "harness/replay/replay_report.hpp"
#include "harness/replay/snapshot_file.hpp"

namespace oomlab::replay {
namespace {

namespace fs = std::filesystem;
using namespace oomlab::literals;

std::string torch_fixture(const std::string& name) {
  return (fs::path(OOMLAB_REPLAY_FIXTURES) / "torch" / (name + "-torch2.11.0_cu130.pickle.gz")).string();
}

// A loop of `steps` iterations: each makes a 1 MiB activation (freed in the step) and a cache
// block one step larger than the last (the previous one freed); the model (64 MiB) is made
// before the loop. `release_cache` frees the last cache block after the loop; `teardown` frees
// the model too.
struct Trace {
  DeviceEvents device;
  StackTable stacks;
};

Trace growing_cache(std::size_t steps, bool release_cache, bool teardown) {
  Trace trace;
  DeviceEvents& device = trace.device;
  auto stack = [&](const char* name, int line) {
    return trace.stacks.add_stack({trace.stacks.add_frame({"generate.py", line, name})});
  };
  const StackId model_stack = stack("load", 3), activation_stack = stack("step", 10), cache_stack = stack("cache", 11);
  const StackId scratch_stack = stack("step", 12), logits_stack = stack("step", 13);
  auto alloc = [&](std::uint64_t size, StackId stack) {
    ReplayEvent event;
    event.kind = ReplayEventKind::alloc;
    event.size = size;
    event.frames = stack;
    device.events.push_back(event);
    ++device.allocs;
    return device.events.size() - 1;
  };
  auto free = [&](std::size_t alloc_event) {
    ReplayEvent event;
    event.kind = ReplayEventKind::free;
    event.size = device.events[alloc_event].size;
    event.alloc_event = alloc_event;
    device.events.push_back(event);
    ++device.frees;
  };
  const std::size_t model = alloc(64_MiB, model_stack);
  std::size_t cache = kNoEvent;
  for (std::size_t step = 1; step <= steps; ++step) {
    const std::size_t activation = alloc(1_MiB, activation_stack);
    const std::size_t grown = alloc(step * 2_MiB, cache_stack);
    if (cache != kNoEvent) free(cache);
    cache = grown;
    const std::size_t scratch = alloc(512_KiB, scratch_stack);  // the loop's requests: 3 each step
    const std::size_t logits = alloc(256_KiB, logits_stack);
    free(scratch);
    free(logits);
    free(activation);
  }
  if (release_cache) free(cache);
  if (teardown) free(model);
  return trace;
}

Growth growth_of(const Trace& trace) {
  const memory::RoundupTable roundup{};
  const Phases phases = find_phases(trace.device, roundup);
  return explain_growth(trace.device, trace.stacks, phases, fit_iteration_growth(phases), roundup);
}

TEST(PhasesGrowth, ACacheReleasedWhileTheModelIsHeldIsNotALeak) {
  const Growth growth = growth_of(growing_cache(12, true, false));
  ASSERT_TRUE(growth.steady);
  EXPECT_FALSE(growth.leak);
  EXPECT_NEAR(growth.bytes_per_iteration, static_cast<double>(2_MiB), static_cast<double>(64_KiB));
  ASSERT_TRUE(growth.released_at.has_value());
  EXPECT_EQ(growth.released_request, 1u + 12 * 4);  // no request follows the release: all were made
  EXPECT_EQ(growth.site, "generate.py:11 cache");
}

TEST(PhasesGrowth, GrowthNeverReleasedIsALeak) {
  const Growth growth = growth_of(growing_cache(12, false, false));
  ASSERT_TRUE(growth.steady);
  EXPECT_TRUE(growth.leak);
  EXPECT_FALSE(growth.released_at.has_value());
}

TEST(PhasesGrowth, GrowthFreedOnlyAtTheScriptsTeardownIsStillALeak) {
  const Growth growth = growth_of(growing_cache(12, true, true));
  ASSERT_TRUE(growth.steady);
  EXPECT_TRUE(growth.leak);
}

TEST(PhasesGrowth, SrganIsARealLeakNamedAtItsSite) {
  const ReplayReport report = analyse_snapshot(load_snapshot(torch_fixture("srgan_leak")), {});
  const Growth& growth = report.iteration_growth;
  EXPECT_TRUE(growth.leak);
  EXPECT_NEAR(growth.bytes_per_iteration, 29.5 * 1024 * 1024, 0.1 * 1024 * 1024);
  // retained_features.append(feature_layers(fake)): the line that keeps the graph alive.
  EXPECT_NE(growth.site.find("record_snapshots.py:177 srgan_leak"), std::string::npos) << growth.site;
}

// generate_growing_cache's first generate() alone: its token steps are the iterations, the
// cache grows every step and is freed when generation ends, with the model still held.
TEST(PhasesGrowth, HuggingFaceGenerateKvCacheIsReleasedNotLeaked) {
  const Snapshot snapshot = load_snapshot(torch_fixture("generate_growing_cache"));
  const ReplayReport whole = analyse_snapshot(snapshot, {});
  EXPECT_FALSE(whole.iteration_growth.leak);
  ASSERT_FALSE(whole.phases.level_events.empty());
  DeviceEvents first_call = whole.events;
  first_call.events.resize(whole.phases.level_events.front() + 1);
  const memory::RoundupTable roundup{};
  const Phases phases = find_phases(first_call, roundup);
  const Growth growth = explain_growth(first_call, snapshot.stacks, phases, fit_iteration_growth(phases), roundup);
  ASSERT_TRUE(growth.steady) << phases.describe();
  EXPECT_FALSE(growth.leak) << describe_growth(growth);
  EXPECT_TRUE(growth.released_at.has_value());
}

}  // namespace
}  // namespace oomlab::replay
