// Scenario `spawn`: a multi-process data loader that multiplies CUDA contexts.
//
// N worker processes make image batches (real CPU work) and hand them to the main process
// through shared memory; the main process uploads each batch through pinned staging and runs one
// training step of a small conv denoiser on it (denoiser.hpp). How the workers start decides everything:
//   broken-spawn  workers re-execute the program and its start-up touches CUDA before the worker
//                 check: every worker creates its own context (529 MiB each on an H200) and the
//                 card fills up -> OOM diagnosed `external`, naming the worker processes;
//   broken-fork   workers are fork()ed after the main process initialised CUDA: their first
//                 CUDA call fails (cudaErrorInitializationError) and the run stops with that;
//   fixed         the worker check runs first in main(); workers are CPU-only: one context in
//                 total, whatever N is.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/runner/scenario.hpp"
#include "scenarios/spawn/loader.hpp"

namespace oomlab::scenarios {

// The story's sizes at one scale.
struct SpawnPlan {
  int workers = 0;              // N for the variants at this scale
  int batch_size = 0;
  ImageSpec image;
  std::size_t model_bytes = 0;  // resident state beyond the denoiser (a bigger model's weights)
  int conv_out_channels = 16;   // the consumer's hidden channels (conv3x3 C -> this -> C)
};
SpawnPlan spawn_plan(Scale scale);

// What one CUDA context costs where none can be created (host/dry): the context_bytes of the GPU
// profile whose budget equals `budget`, else the H200's measured 529 MiB.
std::size_t modelled_context_bytes(std::size_t budget);

struct SpawnStoryOptions {
  WorkerStart start = WorkerStart::spawn_clean;
  int workers = 0;
  int batch_size = 8;
  ImageSpec image;
  std::size_t model_bytes = 0;
  int conv_out_channels = 16;
  std::uint64_t seed = 7;
};

// What a run measured (also written as the record's metrics).
struct SpawnMeasurements {
  int workers = 0;
  int contexts_created = 0;                // this process's + every worker's
  std::vector<int> worker_pids;
  std::vector<std::size_t> worker_device_bytes;  // per worker: its context (0: CPU-only)
  std::size_t external_bytes = 0;          // sum over workers
  std::size_t device_growth_bytes = 0;     // device used after the workers started minus before
  std::size_t device_used_bytes = 0;       // peak device used: allocator reserved + contexts
  std::string memory_method;               // "nvml", "cudaMemGetInfo" or "modelled"
  std::int64_t batches = 0;
  double samples_per_second = 0;
  double loader_wait_fraction = 0;         // share of the loop spent waiting for the next batch
  double gpu_idle_fraction = 0;            // share of the loop the device ran no training step
  std::vector<float> losses;               // per step (host/cuda; empty on dry)
  double final_loss = 0;                   // the last step's loss (host/cuda)
};

// Runs the story once on context's device: builds the model, starts the loader, measures the
// contexts, then context.steps() consumer steps. Throws memory::OomError (external) when the
// workers' contexts push the device past the budget, WorkerStartError when forked workers fail.
SpawnMeasurements run_spawn_story(const SpawnStoryOptions& options, RunContext& context);

class SpawnScenario final : public DeclaredScenario {
 public:
  SpawnScenario();
  std::vector<KnobSpec> knobs() const override;
  std::map<std::string, std::string> variant_knobs(const std::string& variant, Scale scale) const override;
  void run(const std::string& variant, RunContext& context) const override;
};

}  // namespace oomlab::scenarios
