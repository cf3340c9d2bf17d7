// How fast a snapshot replays: a generated 1M-entry training trace (synthetic_trace.hpp),
// decoded from its pickle bytes, turned into the replay's events, and replayed through the
// caching allocator compared with the trace's own decisions. Each stage alone and the whole.
// Target on the 2-core CI machine: the whole under 2 s.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "harness/replay/replay.hpp"
#include "harness/replay/replay_plan.hpp"
#include "harness/replay/snapshot_events.hpp"
#include "harness/replay/snapshot_file.hpp"
#include "synthetic_trace.hpp"

namespace {

using namespace oomlab::replay;

constexpr std::size_t kEntries = 1'000'000;

const std::vector<std::uint8_t>& pickle_bytes() {
  static const std::vector<std::uint8_t> bytes = bench::synthetic_snapshot(kEntries);
  return bytes;
}

const Snapshot& decoded() {
  static const Snapshot snapshot = read_snapshot(pickle_bytes().data(), pickle_bytes().size(), "synthetic");
  return snapshot;
}

void count(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kEntries));
  state.counters["pickle_MB"] = static_cast<double>(pickle_bytes().size()) / 1e6;
}

void BM_Decode(benchmark::State& state) {
  for (auto _ : state) {
    Snapshot snapshot = read_snapshot(pickle_bytes().data(), pickle_bytes().size(), "synthetic");
    benchmark::DoNotOptimize(snapshot);
  }
  count(state);
}

void BM_Events(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(snapshot_events(decoded()));
  count(state);
}

void BM_ReplayCompared(benchmark::State& state) {
  const DeviceEvents device = snapshot_events(decoded()).at(0);
  const ReplayPlan plan = plan_replay(device, decoded());
  ReplayOptions options;
  options.compare = true;
  for (auto _ : state) {
    ReplayResult result = replay(device, plan, options);
    if (result.divergent_events != 0) state.SkipWithError("the generated trace diverged");
    benchmark::DoNotOptimize(result);
  }
  count(state);
}

void BM_WholeReplayFromBytes(benchmark::State& state) {
  ReplayOptions options;
  options.compare = true;
  for (auto _ : state) {
    const Snapshot snapshot = read_snapshot(pickle_bytes().data(), pickle_bytes().size(), "synthetic");
    const DeviceEvents device = snapshot_events(snapshot).at(0);
    ReplayResult result = replay(device, plan_replay(device, snapshot), options);
    benchmark::DoNotOptimize(result);
  }
  count(state);
}

BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Events)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ReplayCompared)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_WholeReplayFromBytes)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

// OOMLAB_REPLAY_BENCH_SNAPSHOT=FILE also writes the generated snapshot there, to time
// `oomlab replay FILE` end to end.
int main(int argc, char** argv) {
  if (const char* path = std::getenv("OOMLAB_REPLAY_BENCH_SNAPSHOT")) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(pickle_bytes().data()),
               static_cast<std::streamsize>(pickle_bytes().size()));
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
