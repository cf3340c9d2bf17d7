// Growth between iterations: a leak when the program never gives it back (srgan_leak, a real
// one), not a leak when it is released while the program still holds its model (a KV cache
// growing one token per generate step, freed when generation ends).
#include "harness/replay/phases_growth.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

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

  // A one-frame stack: `function` at `file`:`line`.
  StackId stack(const char* file, const char* function, int line) {
    return stacks.add_stack({stacks.add_frame({file, line, function})});
  }
  // An allocation's event index.
  std::size_t alloc(std::uint64_t size, StackId frames) {
    ReplayEvent event;
    event.kind = ReplayEventKind::alloc;
    event.size = size;
    event.frames = frames;
    device.events.push_back(event);
    ++device.allocs;
    return device.events.size() - 1;
  }
  // The block's end: free, or free_requested (dropped by the program, still used on a stream).
  void release(std::size_t alloc_event, ReplayEventKind kind = ReplayEventKind::free) {
    ReplayEvent event;
    event.kind = kind;
    event.size = device.events[alloc_event].size;
    event.alloc_event = alloc_event;
    device.events.push_back(event);
    device.frees += kind == ReplayEventKind::free;
  }
};

Trace growing_cache(std::size_t steps, bool release_cache, bool teardown) {
  Trace trace;
  auto stack = [&](const char* name, int line) { return trace.stack("generate.py", name, line); };
  const StackId model_stack = stack("load", 3), activation_stack = stack("step", 10), cache_stack = stack("cache", 11);
  const StackId scratch_stack = stack("step", 12), logits_stack = stack("step", 13);
  auto alloc = [&](std::uint64_t size, StackId stack) { return trace.alloc(size, stack); };
  auto free = [&](std::size_t alloc_event) { trace.release(alloc_event); };
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

// The optimizer's state made lazily: a model (64 MiB) then `steps` training steps of the same
// three requests (activation, gradient, scratch; freed in the step). The first step's
// optimizer.step() loops over `params` parameters making each one's state (exp_avg and
// exp_avg_sq of 8 MiB, a step count), kept. With `state_every_step`, every step makes another
// state instead: growth that goes on.
Trace lazy_state(std::size_t params, std::size_t steps, bool state_every_step, bool teardown) {
  Trace trace;
  auto stack = [&](const char* name, int line) { return trace.stack("train.py", name, line); };
  const StackId model_stack = stack("load", 3), act_stack = stack("forward", 10), grad_stack = stack("backward", 11);
  const StackId scratch_stack = stack("backward", 12), avg_stack = stack("step", 20), sq_stack = stack("step", 21);
  const StackId count_stack = stack("step", 22);
  auto alloc = [&](std::uint64_t size, StackId stack) { return trace.alloc(size, stack); };
  auto free = [&](std::size_t alloc_event) { trace.release(alloc_event); };
  std::vector<std::size_t> kept;
  auto make_state = [&] {
    kept.push_back(alloc(8_MiB, avg_stack));
    kept.push_back(alloc(8_MiB, sq_stack));
    kept.push_back(alloc(512, count_stack));
  };
  const std::size_t model = alloc(64_MiB, model_stack);
  for (std::size_t step = 1; step <= steps; ++step) {
    const std::size_t act = alloc(2_MiB, act_stack);
    const std::size_t grad = alloc(4_MiB, grad_stack);
    const std::size_t scratch = alloc(1_MiB, scratch_stack);
    free(scratch);
    free(act);
    if (step == 1 && !state_every_step) {
      for (std::size_t p = 0; p < params; ++p) make_state();
    }
    if (state_every_step) make_state();
    free(grad);
  }
  if (teardown) {
    for (const std::size_t block : kept) free(block);
    free(model);
  }
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

TEST(PhasesGrowth, StateMadeOnceInTheFirstStepsIsAPlateauNotALeak) {
  for (const bool teardown : {false, true}) {
    const Growth growth = growth_of(lazy_state(8, 24, false, teardown));
    ASSERT_TRUE(growth.steady) << "teardown " << teardown;
    EXPECT_FALSE(growth.leak) << describe_growth(growth);
    EXPECT_FALSE(growth.released_at.has_value());
    ASSERT_TRUE(growth.stopped_at.has_value());
    EXPECT_EQ(growth.stopped_request, 1u + 3 + 7 * 3);  // the last level: as the 8th state begins
    EXPECT_NEAR(growth.bytes_per_iteration, static_cast<double>(16_MiB), static_cast<double>(64_KiB));
  }
}

TEST(PhasesGrowth, StateMadeEveryStepToTheEndIsALeak) {
  const Growth growth = growth_of(lazy_state(1, 24, true, false));
  ASSERT_TRUE(growth.steady);
  EXPECT_TRUE(growth.leak) << describe_growth(growth);
  EXPECT_FALSE(growth.stopped_at.has_value());
}

// record_stream: each step's block is dropped by the program (free_requested) at once, but is
// back in the cache (free) only when the side stream is done: here, all of them at the end.
Trace side_stream_blocks(std::size_t steps) {
  Trace trace;
  auto stack = [&](int line) { return trace.stack("side.py", "step", line); };
  auto alloc = [&](std::uint64_t size, StackId frames) { return trace.alloc(size, frames); };
  auto release = [&](std::size_t block, ReplayEventKind kind) { trace.release(block, kind); };
  const StackId weights = stack(3), used_on_side = stack(10), other = stack(11), scratch = stack(12);
  alloc(64_MiB, weights);
  std::vector<std::size_t> pending;
  for (std::size_t step = 0; step < steps; ++step) {
    const std::size_t b = alloc(64_MiB, used_on_side);
    release(b, ReplayEventKind::free_requested);  // del b, after b.record_stream(side)
    pending.push_back(b);
    const std::size_t c = alloc(8_MiB, other), d = alloc(1_MiB, scratch);
    for (const std::size_t block : {d, c}) {
      release(block, ReplayEventKind::free_requested);
      release(block, ReplayEventKind::free);
    }
  }
  for (const std::size_t b : pending) release(b, ReplayEventKind::free);  // synchronize()
  return trace;
}

TEST(PhasesGrowth, BlocksDroppedButInUseOnAnotherStreamAreNotALeak) {
  const Growth growth = growth_of(side_stream_blocks(8));
  EXPECT_FALSE(growth.leak) << describe_growth(growth);
  // The same blocks kept by the program (never dropped) are a leak.
  Trace kept = side_stream_blocks(8);
  std::vector<ReplayEvent> events;
  std::vector<std::size_t> renumbered(kept.device.events.size());
  for (std::size_t i = 0; i < kept.device.events.size(); ++i) {
    ReplayEvent event = kept.device.events[i];
    const bool side_block_release =
        event.alloc_event != kNoEvent && kept.device.events[event.alloc_event].size == 64_MiB;
    renumbered[i] = events.size();
    if (side_block_release) continue;
    if (event.alloc_event != kNoEvent) event.alloc_event = renumbered[event.alloc_event];
    events.push_back(event);
  }
  kept.device.events = events;
  const Growth leak = growth_of(kept);
  EXPECT_TRUE(leak.leak) << describe_growth(leak);
}

TEST(PhasesGrowth, RecordStreamFixtureIsNotALeak) {
  const ReplayReport report = analyse_snapshot(load_snapshot(torch_fixture("record_stream")), {});
  EXPECT_FALSE(report.iteration_growth.leak) << describe_growth(report.iteration_growth);
}

TEST(PhasesGrowth, CompiledCudaGraphsOptimizerStateIsNotALeak) {
  // torch.compile(mode="reduce-overhead") with AdamW: the state made in the first step's loop
  // over parameters, then four more steps on that plateau.
  const ReplayReport report = analyse_snapshot(load_snapshot(torch_fixture("compile_cuda_graphs")), {});
  EXPECT_FALSE(report.iteration_growth.leak) << describe_growth(report.iteration_growth);
  EXPECT_TRUE(report.iteration_growth.stopped_at.has_value());
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
