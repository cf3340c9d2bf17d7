// A multi-process data loader: N worker processes synthesise and augment image batches (real CPU
// work, sample_synth.hpp) and deliver them in order through a shared-memory ring (shm_ring.hpp).
// N = 0 produces batches in the main process, as PyTorch's num_workers=0 does.
//
// How the workers start is the whole story of the `spawn` scenario:
//   spawn_clean          re-execute this program as a worker; the worker check runs first, the
//                        worker never touches CUDA (the fix);
//   spawn_touching_cuda  the same, but the worker's start-up creates a CUDA context before it
//                        does its CPU work (a static device object, a call before the check);
//   fork_after_cuda      fork() the main process after it initialised CUDA; the worker's first
//                        CUDA call (pinning its buffer) fails.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/device/device.hpp"
#include "scenarios/spawn/sample_synth.hpp"

namespace oomlab::scenarios {

enum class WorkerStart { spawn_clean, spawn_touching_cuda, fork_after_cuda };
const char* worker_start_name(WorkerStart start);

struct LoaderOptions {
  DeviceKind device_kind = DeviceKind::host;
  WorkerStart start = WorkerStart::spawn_clean;
  int workers = 0;                       // 0: batches are made in the main process
  int batch_size = 8;
  ImageSpec image;
  std::int64_t batches = 8;              // batches the loader delivers in total
  std::uint64_t seed = 1;
  std::size_t simulated_context_bytes = 0;  // host/dry: what one CUDA context costs
  int prefetch_per_worker = 2;           // ring slots = workers * this (PyTorch's prefetch_factor)
};

// What one worker process reported about its start-up.
struct WorkerInfo {
  int pid = 0;
  bool created_context = false;  // its start-up created a CUDA context (really or simulated)
  std::size_t simulated_context_bytes = 0;  // host/dry: the modelled cost of that context
};

// Forked workers whose first CUDA call failed; the message names each worker and its error.
class WorkerStartError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Exit code of a forked worker whose first CUDA call failed.
constexpr int kForkedCudaFailureExit = 3;

// On host/dry: marks "this process initialised CUDA" so that a forked child fails its first
// CUDA call exactly as it would on a GPU (the flag is copied into the child by fork()).
void mark_simulated_cuda_initialised(bool initialised);

class BatchLoader {
 public:
  struct Batch {
    std::int64_t index = -1;
    int worker = -1;                  // the worker that made it (-1: the main process)
    const std::int64_t* sample_ids = nullptr;  // batch_size ids
    const float* pixels = nullptr;    // (batch_size, crop, crop, channels) f32
  };

  // Starts the workers and waits until each reports ready. Throws WorkerStartError when forked
  // workers fail their first CUDA call, std::runtime_error when a worker dies at start-up.
  explicit BatchLoader(const LoaderOptions& options);
  ~BatchLoader();  // stops the workers, reaps them, unlinks the ring
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // The next batch in order, valid until release(). Throws std::runtime_error when a worker
  // died, std::out_of_range past the last batch.
  Batch next();
  void release(const Batch& batch);

  const LoaderOptions& options() const { return options_; }
  std::size_t batch_pixel_floats() const;
  // Seconds next() spent waiting for a batch (or making it, with 0 workers).
  double wait_seconds() const { return wait_seconds_; }
  const std::vector<WorkerInfo>& workers() const { return workers_; }
  // The ring's shared-memory name ("" with 0 workers); already unlinked once workers started.
  const std::string& shm_name() const;

 private:
  struct Impl;
  LoaderOptions options_;
  std::unique_ptr<Impl> impl_;
  std::vector<WorkerInfo> workers_;
  std::int64_t next_batch_ = 0;
  double wait_seconds_ = 0;
};

}  // namespace oomlab::scenarios
