#include "scenarios/spawn/loader.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>

#include "harness/process/process.hpp"
#include "harness/process/worker.hpp"
#include "scenarios/spawn/cuda_support.hpp"
#include "scenarios/spawn/shm_ring.hpp"

namespace oomlab::scenarios {
namespace {

constexpr const char* kWorkerName = "spawn.loader";
constexpr int kMaxWorkers = 64;
constexpr std::size_t kAlign = 64;
std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::atomic<bool> simulated_cuda_initialised{false};

enum WorkerState : std::int32_t { starting = 0, ready = 1 };

// The control block in the ring's user area: the loader's options for the workers, and each
// worker's start-up report. Written by the parent before any worker starts.
struct LoaderControl {
  std::atomic<std::int32_t> stop;
  std::int32_t parent_pid;
  std::int32_t workers, batch_size, device_kind, start;
  std::int32_t source_size, crop_size, channels;
  std::int64_t batches;
  std::uint64_t seed;
  std::uint64_t simulated_context_bytes;
  struct Worker {
    std::atomic<std::int32_t> state;
    std::atomic<std::int32_t> pid;
    std::atomic<std::int32_t> created_context;
  } worker[kMaxWorkers];
};

// A batch in a ring slot: [batch index, worker] [sample ids] [pixels], each 64-byte aligned.
struct BatchLayout {
  std::size_t ids_offset, pixels_offset, bytes;
  BatchLayout(int batch_size, std::size_t floats_per_batch) {
    ids_offset = align_up(2 * sizeof(std::int64_t));
    pixels_offset = ids_offset + align_up(sizeof(std::int64_t) * static_cast<std::size_t>(batch_size));
    bytes = pixels_offset + floats_per_batch * sizeof(float);
  }
};

ImageSpec image_of(const LoaderControl& control) {
  return ImageSpec{control.source_size, control.crop_size, control.channels};
}

// Fills one batch: the CPU work of the loader.
void make_batch(const ImageSpec& image, int batch_size, std::uint64_t seed, std::int64_t batch,
                int worker, void* slot, const BatchLayout& layout) {
  auto* head = static_cast<std::int64_t*>(slot);
  head[0] = batch;
  head[1] = worker;
  auto* ids = reinterpret_cast<std::int64_t*>(static_cast<char*>(slot) + layout.ids_offset);
  auto* pixels = reinterpret_cast<float*>(static_cast<char*>(slot) + layout.pixels_offset);
  for (int i = 0; i < batch_size; ++i) {
    ids[i] = batch * batch_size + i;
    synthesize_sample(image, seed, ids[i], pixels + static_cast<std::size_t>(i) * image.floats_per_sample());
  }
}

// A worker's loop: batches index, index + N, index + 2N, ... until done, stopped or orphaned.
int worker_loop(ShmRing& ring, LoaderControl& control, int index) {
  const ImageSpec image = image_of(control);
  const BatchLayout layout(control.batch_size, image.floats_per_sample() * control.batch_size);
  const pid_t parent = control.parent_pid;
  auto keep_waiting = [&] { return control.stop.load() == 0 && ::getppid() == parent; };
  for (std::int64_t b = index; b < control.batches; b += control.workers) {
    void* slot = ring.begin_write(b, keep_waiting);
    if (!slot) return 0;  // stopped by the parent (or the parent is gone)
    make_batch(image, control.batch_size, control.seed, b, index, slot, layout);
    ring.end_write(b);
  }
  // Like a persistent DataLoader worker, stay (with any CUDA context start-up made) until the
  // loader stops: a worker that finished its share must not hide its context's cost.
  while (keep_waiting()) ::usleep(1000);
  return 0;
}

void report_ready(LoaderControl& control, int index, bool created_context) {
  control.worker[index].pid.store(static_cast<std::int32_t>(::getpid()));
  control.worker[index].created_context.store(created_context ? 1 : 0);
  control.worker[index].state.store(ready);
}

// The spawned worker's main: `spawn.loader SHM_NAME INDEX`. It runs after the worker check in
// main(), so it touches CUDA only when the loader says start-up does (the broken variant).
int spawned_worker_main(const std::vector<std::string>& args) {
  if (args.size() != 2) throw std::invalid_argument("spawn.loader needs SHM_NAME INDEX");
  ShmRing ring = ShmRing::attach(args[0]);
  auto& control = *static_cast<LoaderControl*>(ring.user_area());
  const int index = std::stoi(args[1]);
  if (index < 0 || index >= control.workers) throw std::out_of_range("worker index out of range");
  bool created_context = false;
  if (control.start == static_cast<std::int32_t>(WorkerStart::spawn_touching_cuda)) {
    // What a static device object in start-up does in every re-executed worker.
    if (control.device_kind == static_cast<std::int32_t>(DeviceKind::cuda)) {
      const std::string error = spawn_cuda::create_context();
      if (!error.empty()) throw std::runtime_error("start-up CUDA context: " + error);
    }
    created_context = true;  // on host/dry the context is modelled: its cost is the profile's
  }
  report_ready(control, index, created_context);
  return worker_loop(ring, control, index);
}

OOMLAB_REGISTER_WORKER(kWorkerName, spawned_worker_main);

}  // namespace

const char* worker_start_name(WorkerStart start) {
  switch (start) {
    case WorkerStart::spawn_clean: return "spawn";
    case WorkerStart::spawn_touching_cuda: return "spawn, start-up touches CUDA";
    case WorkerStart::fork_after_cuda: return "fork after CUDA init";
  }
  return "unknown";
}

void mark_simulated_cuda_initialised(bool initialised) { simulated_cuda_initialised = initialised; }

struct BatchLoader::Impl {
  BatchLayout layout;
  std::optional<ShmRing> ring;
  LoaderControl* control = nullptr;
  std::vector<process::Child> children;
  std::vector<char> inline_batch;  // 0 workers: the batch the main process makes
  std::string shm_name;
  Impl(const LoaderOptions& o)
      : layout(o.batch_size, o.image.floats_per_sample() * static_cast<std::size_t>(o.batch_size)) {}

  // Throws when a worker has ended before delivering everything it owes.
  void check_workers() {
    for (std::size_t i = 0; i < children.size(); ++i) {
      if (auto status = children[i].try_wait(); status && !status->success()) {
        throw std::runtime_error("loader worker " + std::to_string(i) + " (pid " +
                                 std::to_string(children[i].pid()) + ") died: " +
                                 status->describe() + "; its stderr says why");
      }
    }
  }
};

// The body of a forked worker: it inherited the ring's mapping and, with it, the parent's CUDA
// state. Its first CUDA call (pinning its output buffer) is where that state bites.
static int forked_worker_body(ShmRing& ring, LoaderControl& control, int index, DeviceKind kind,
                              int report_fd) {
  std::string error;
  if (kind == DeviceKind::cuda) {
    error = spawn_cuda::first_call_in_forked_child();
  } else if (simulated_cuda_initialised) {
    error = "cudaHostAlloc failed: cudaErrorInitializationError (initialization error) "
            "[simulated on " + std::string(device_kind_name(kind)) +
            ": CUDA was initialised in the parent before fork()]";
  }
  if (!error.empty()) {
    process::write_all(report_fd, "worker " + std::to_string(index) + " (pid " +
                                      std::to_string(::getpid()) +
                                      "): first CUDA call in the forked worker failed: " + error);
    return kForkedCudaFailureExit;
  }
  report_ready(control, index, false);
  return worker_loop(ring, control, index);
}

BatchLoader::BatchLoader(const LoaderOptions& options)
    : options_(options), impl_(std::make_unique<Impl>(options)) {
  if (options.workers < 0 || options.workers > kMaxWorkers) {
    throw std::invalid_argument("BatchLoader: workers must be in [0, " + std::to_string(kMaxWorkers) + "]");
  }
  if (options.batch_size <= 0 || options.batches < 0 || options.prefetch_per_worker <= 0) {
    throw std::invalid_argument("BatchLoader: batch_size and prefetch must be positive, batches >= 0");
  }
  synthesize_sample(options.image, 0, 0, std::vector<float>(options.image.floats_per_sample()).data());
  if (options.workers == 0) {
    impl_->inline_batch.resize(impl_->layout.bytes + kAlign);
    return;
  }

  const std::size_t slots = static_cast<std::size_t>(options.workers * options.prefetch_per_worker);
  impl_->shm_name = ShmRing::unique_name("spawn");
  impl_->ring.emplace(ShmRing::create(impl_->shm_name, slots, impl_->layout.bytes, sizeof(LoaderControl)));
  LoaderControl& control = *new (impl_->ring->user_area()) LoaderControl;
  impl_->control = &control;
  control.stop = 0;
  control.parent_pid = static_cast<std::int32_t>(::getpid());
  control.workers = options.workers;
  control.batch_size = options.batch_size;
  control.device_kind = static_cast<std::int32_t>(options.device_kind);
  control.start = static_cast<std::int32_t>(options.start);
  control.source_size = options.image.source_size;
  control.crop_size = options.image.crop_size;
  control.channels = options.image.channels;
  control.batches = options.batches;
  control.seed = options.seed;
  control.simulated_context_bytes = options.simulated_context_bytes;
  for (auto& w : control.worker) { w.state = starting; w.pid = 0; w.created_context = 0; }

  for (int i = 0; i < options.workers; ++i) {
    if (options.start == WorkerStart::fork_after_cuda) {
      ShmRing& ring = *impl_->ring;
      const DeviceKind kind = options.device_kind;
      impl_->children.push_back(process::fork_call([&ring, &control, i, kind](int report_fd) {
        return forked_worker_body(ring, control, i, kind, report_fd);
      }));
    } else {
      impl_->children.push_back(process::spawn_worker(kWorkerName, {impl_->shm_name, std::to_string(i)}));
    }
  }

  // Wait until every worker is ready or has ended.
  auto all_settled = [&] {
    for (int i = 0; i < options.workers; ++i) {
      if (control.worker[i].state.load() != ready && !impl_->children[i].try_wait()) return false;
    }
    return true;
  };
  // A worker that neither reports nor ends (a CUDA call that hangs after fork) must not hang
  // the run: give start-up two minutes, then fail with the workers' states.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  if (!wait_until(all_settled, [&] { return std::chrono::steady_clock::now() < deadline; })) {
    control.stop = 1;
    throw std::runtime_error("data loader: workers did not report ready within 120 s (" +
                             std::string(worker_start_name(options.start)) + ")");
  }
  // One line for the user: the first failure in full, then how many others failed.
  std::string failures;
  int failed_workers = 0;
  bool forked_cuda_failure = false;
  for (int i = 0; i < options.workers; ++i) {
    process::Child& child = impl_->children[i];
    if (control.worker[i].state.load() == ready) continue;
    const process::ExitStatus status = child.wait();
    std::string report = child.report();
    forked_cuda_failure |= status.exited && status.code == kForkedCudaFailureExit && !report.empty();
    if (failed_workers++ > 0) continue;
    failures = (report.empty() ? "worker " + std::to_string(i) + " (pid " + std::to_string(child.pid()) +
                                      ") ended at start-up: " + status.describe()
                                : report + " [" + status.describe() + "]");
  }
  if (failed_workers > 0) {
    control.stop = 1;
    if (failed_workers > 1) {
      failures += "; " + std::to_string(failed_workers - 1) + " more of " +
                  std::to_string(options.workers) + " workers failed at start-up as well";
    }
    const std::string message =
        "data loader: workers could not start (" + std::string(worker_start_name(options.start)) + "): " + failures;
    if (forked_cuda_failure) throw WorkerStartError(message);
    throw std::runtime_error(message);
  }
  // Every worker has attached: the name is no longer needed, and unlinking now means nothing is
  // left in /dev/shm even if this process is killed.
  impl_->ring->unlink();
  for (int i = 0; i < options.workers; ++i) {
    WorkerInfo info;
    info.pid = control.worker[i].pid.load();
    info.created_context = control.worker[i].created_context.load() != 0;
    info.simulated_context_bytes =
        info.created_context && options.device_kind != DeviceKind::cuda ? options.simulated_context_bytes : 0;
    workers_.push_back(info);
  }
}

BatchLoader::~BatchLoader() {
  if (impl_->control) impl_->control->stop = 1;
  for (process::Child& child : impl_->children) {
    // Workers see the stop flag within a millisecond; wait briefly, then the Child kills.
    for (int i = 0; i < 500 && !child.try_wait(); ++i) ::usleep(1000);
  }
  impl_->children.clear();
}

std::size_t BatchLoader::batch_pixel_floats() const {
  return options_.image.floats_per_sample() * static_cast<std::size_t>(options_.batch_size);
}

const std::string& BatchLoader::shm_name() const { return impl_->shm_name; }

BatchLoader::Batch BatchLoader::next() {
  if (next_batch_ >= options_.batches) throw std::out_of_range("BatchLoader: no batches left");
  const auto start = std::chrono::steady_clock::now();
  const void* slot = nullptr;
  if (options_.workers == 0) {
    void* buffer = reinterpret_cast<void*>(align_up(reinterpret_cast<std::uintptr_t>(impl_->inline_batch.data())));
    make_batch(options_.image, options_.batch_size, options_.seed, next_batch_, -1, buffer, impl_->layout);
    slot = buffer;
  } else {
    slot = impl_->ring->begin_read(next_batch_, [&] { impl_->check_workers(); return true; });
  }
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto* head = static_cast<const std::int64_t*>(slot);
  Batch batch;
  batch.index = head[0];
  batch.worker = static_cast<int>(head[1]);
  batch.sample_ids = reinterpret_cast<const std::int64_t*>(static_cast<const char*>(slot) + impl_->layout.ids_offset);
  batch.pixels = reinterpret_cast<const float*>(static_cast<const char*>(slot) + impl_->layout.pixels_offset);
  ++next_batch_;
  return batch;
}

void BatchLoader::release(const Batch& batch) {
  if (options_.workers > 0) impl_->ring->end_read(batch.index);
}

}  // namespace oomlab::scenarios
