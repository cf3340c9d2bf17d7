// load_bench: the weights7b loader itself (stream_load) on a real checkpoint, repeated, for a
// few pinned-ring shapes, with the loader's own breakdown of where the time went. Where
// host_path_bench compares ways to move bytes, this measures the one the scenario uses, with its
// allocations, tensor boundaries and ring, so a ring shape can be chosen on numbers.
//
//   load_bench [--preset llama-7b] [--dtype bf16|f32] [--format bf16|int8] [--chunk-mib 64]
//              [--slot-mib 32,16] [--slots 2,3] [--repeats 3] [--json load_bench.json]
//
// The checkpoint is the scenario's (checkpoint_cache.hpp: generated once, cached). Each load
// runs on a fresh Device, so it allocates from an empty pool as a new process would; the page
// cache is warm after the first pass. GB/s are of file bytes (1 GB = 1e9 B).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/runner/atomic_file.hpp"
#include "scenarios/weights7b/checkpoint_cache.hpp"
#include "scenarios/weights7b/weight_loader.hpp"

namespace {

using namespace oomlab;
using namespace oomlab::scenarios::weights7b;

struct Args {
  std::string preset = "llama-7b";
  std::string dtype = "bf16";
  std::string format = "bf16";
  std::size_t chunk_mib = 64;  // the device ring's chunk (f32 and int8 loads)
  std::vector<std::size_t> slot_mib{32, 16};
  std::vector<std::size_t> slots{2, 3};
  int repeats = 3;
  std::string json = "load_bench.json";
};

nlohmann::json one_load(const CheckpointSource& source, WeightFormat format, std::size_t chunk_bytes,
                        const RingShape& ring) {
  Device device(DeviceKind::cuda, memory::AllocatorConfig{});
  LoadStats stats;
  const auto start = std::chrono::steady_clock::now();
  {
    const LoadedWeights weights = stream_load(device, source, format, chunk_bytes, stats, ring);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return {{"seconds", seconds},
            {"gb_per_s", static_cast<double>(stats.file_bytes) / seconds / 1e9},
            {"allocate_seconds", stats.allocate_seconds},
            {"setup_seconds", stats.setup_seconds},
            {"host_copy_seconds", stats.host_copy_seconds},
            {"slot_wait_seconds", stats.slot_wait_seconds},
            {"release_seconds", stats.release_seconds},
            {"chunks", stats.chunks},
            {"peak_allocated_bytes", device.allocator().stats().allocated.peak},
            {"weights_bytes", weights.bytes()}};
  }
}

void run(const Args& args) {
  const std::string why = why_not_writable(args.json);
  if (!why.empty()) throw std::invalid_argument("--json " + args.json + ": " + why);
  const DType dtype = args.dtype == "f32" ? DType::f32 : DType::bf16;
  const WeightFormat format = args.format == "int8" ? WeightFormat::int8_rowwise : WeightFormat::bf16;
  const CheckpointSource source = checkpoint_for(DeviceKind::cuda, {args.preset, dtype}, [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  });
  nlohmann::json record = {{"preset", args.preset},
                           {"file_dtype", args.dtype},
                           {"format", args.format},
                           {"file_bytes", source.data_bytes()},
                           {"chunk_mib", args.chunk_mib},
                           {"repeats", args.repeats}};
  nlohmann::json results = nlohmann::json::array();
  const std::size_t chunk_bytes = args.chunk_mib * MiB;
  one_load(source, format, chunk_bytes, kDefaultRing);  // warms the page cache
  for (const std::size_t slot_mib : args.slot_mib) {
    for (const std::size_t slots : args.slots) {
      nlohmann::json passes = nlohmann::json::array();
      double best = 0;
      for (int r = 0; r < args.repeats; ++r) {
        passes.push_back(one_load(source, format, chunk_bytes, RingShape{slot_mib * MiB, slots}));
        best = std::max(best, passes.back()["gb_per_s"].get<double>());
      }
      std::printf("%3zu slots of %3zu MiB: best %.1f GB/s  (last: %.3f s; alloc %.3f setup %.3f copy %.3f wait %.3f "
                  "release %.3f)\n",
                  slots, slot_mib, best, passes.back()["seconds"].get<double>(),
                  passes.back()["allocate_seconds"].get<double>(), passes.back()["setup_seconds"].get<double>(),
                  passes.back()["host_copy_seconds"].get<double>(), passes.back()["slot_wait_seconds"].get<double>(),
                  passes.back()["release_seconds"].get<double>());
      std::fflush(stdout);
      results.push_back({{"slot_mib", slot_mib}, {"slots", slots}, {"best_gb_per_s", best}, {"passes", passes}});
    }
  }
  record["results"] = results;
  write_file_atomically(args.json, record.dump(2) + "\n");
  std::printf("wrote %s\n", args.json.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  CLI::App app{"load_bench: the weights7b streamed load on a real checkpoint, per pinned-ring shape"};
  app.add_option("--preset", args.preset, "checkpoint preset (llama-7b, llama-small, ...)");
  app.add_option("--dtype", args.dtype, "file dtype")->check(CLI::IsMember({"bf16", "f32"}));
  app.add_option("--format", args.format, "weights on the device")->check(CLI::IsMember({"bf16", "int8"}));
  app.add_option("--chunk-mib", args.chunk_mib, "device ring chunk in MiB (f32/int8 loads)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--slot-mib", args.slot_mib, "pinned ring slot sizes in MiB")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  app.add_option("--slots", args.slots, "pinned ring slot counts")->delimiter(',')->check(CLI::Range(2, 64));
  app.add_option("--repeats", args.repeats, "loads per shape")->check(CLI::Range(1, 100));
  app.add_option("--json", args.json, "where the results go");
  CLI11_PARSE(app, argc, argv);
  try {
    run(args);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "load_bench: %s\n", error.what());
    return 1;
  }
  return 0;
}
