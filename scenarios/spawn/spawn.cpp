#include "scenarios/spawn/spawn.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>
#include <stdexcept>

#include "harness/device/op_profiler.hpp"
#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "harness/runner/run_context.hpp"
#include "kernels/core/tensor.hpp"
#include "scenarios/spawn/batch_uploader.hpp"
#include "scenarios/spawn/cuda_support.hpp"
#include "scenarios/spawn/denoiser.hpp"
#include "scenarios/spawn/device_budget.hpp"

namespace oomlab::scenarios {
namespace {

const char* const kBrokenSpawn = "broken-spawn";
const char* const kBrokenFork = "broken-fork";
const char* const kFixed = "fixed";
const char* const kConsumerRange = "spawn.consumer";  // the training step, for the GPU idle fraction

// broken-fork on host/dry: "the parent initialised CUDA" for the lifetime of the run only.
struct SimulatedCudaInit {
  explicit SimulatedCudaInit(bool on) { mark_simulated_cuda_initialised(on); }
  ~SimulatedCudaInit() { mark_simulated_cuda_initialised(false); }
};

// Who holds device memory outside this process, measured (cuda) or modelled (host/dry).
void measure_worker_contexts(const BatchLoader& loader, Device& device, std::size_t used_before,
                             std::size_t context_bytes, SpawnMeasurements& m) {
  m.worker_device_bytes.assign(loader.workers().size(), 0);
  for (const WorkerInfo& w : loader.workers()) m.worker_pids.push_back(w.pid);
  int reported = 0;  // workers whose start-up says it created a context
  for (const WorkerInfo& w : loader.workers()) reported += w.created_context ? 1 : 0;

  if (!device.is_cuda()) {
    m.memory_method = "modelled";
    for (std::size_t i = 0; i < loader.workers().size(); ++i) {
      m.worker_device_bytes[i] = loader.workers()[i].simulated_context_bytes;
    }
    m.external_bytes = std::accumulate(m.worker_device_bytes.begin(), m.worker_device_bytes.end(), std::size_t{0});
    m.device_growth_bytes = m.external_bytes;
    m.contexts_created = 1 + reported;
    return;
  }
  const std::size_t used_after = spawn_cuda::device_used_bytes();
  m.device_growth_bytes = used_after > used_before ? used_after - used_before : 0;
  std::vector<int> pids = m.worker_pids;
  pids.push_back(static_cast<int>(::getpid()));
  // NVML lists a new context a little after the process made it: poll until every worker that
  // reported a context is listed (or 2 s pass), so the count is never a race.
  auto per_process = spawn_cuda::nvml_process_bytes(pids);
  for (int attempt = 0; per_process && attempt < 40; ++attempt) {
    int listed = 0;
    for (int pid : m.worker_pids) listed += per_process->count(pid) ? 1 : 0;
    if (listed >= reported) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    per_process = spawn_cuda::nvml_process_bytes(pids);
  }
  if (per_process) {
    m.memory_method = "nvml";
    m.contexts_created = 1;
    for (std::size_t i = 0; i < m.worker_pids.size(); ++i) {
      auto found = per_process->find(m.worker_pids[i]);
      m.worker_device_bytes[i] = found == per_process->end() ? 0 : found->second;
      m.contexts_created += m.worker_device_bytes[i] > 0 ? 1 : 0;
    }
  } else {
    // No per-process numbers: the device grew by the workers' contexts; count them in units of
    // one context and share the growth among the workers that said they made one.
    m.memory_method = "cudaMemGetInfo";
    m.contexts_created = 1 + static_cast<int>(std::lround(static_cast<double>(m.device_growth_bytes) /
                                                          static_cast<double>(context_bytes)));
    for (std::size_t i = 0; i < m.worker_pids.size(); ++i) {
      if (loader.workers()[i].created_context) m.worker_device_bytes[i] = m.device_growth_bytes / reported;
    }
  }
  m.external_bytes = std::accumulate(m.worker_device_bytes.begin(), m.worker_device_bytes.end(), std::size_t{0});
}

void record(const SpawnMeasurements& m, RunContext& context) {
  context.set_metric("workers", m.workers);
  context.set_metric("contexts_created", m.contexts_created);
  std::size_t with_context = 0;
  for (std::size_t b : m.worker_device_bytes) with_context += b > 0 ? 1 : 0;
  context.set_metric("worker_context_bytes",
                     with_context ? static_cast<double>(m.external_bytes) / static_cast<double>(with_context) : 0.0);
  context.set_metric("external_bytes", static_cast<double>(m.external_bytes));
  context.set_metric("device_growth_from_workers_bytes", static_cast<double>(m.device_growth_bytes));
  context.set_metric("device_used_bytes", static_cast<double>(m.device_used_bytes));
}

}  // namespace

SpawnPlan spawn_plan(Scale scale) {
  SpawnPlan plan;
  switch (scale) {
    case Scale::tiny:
      plan.workers = 2; plan.batch_size = 8; plan.image = {80, 64, 3}; plan.model_bytes = 256 * MiB;
      plan.conv_out_channels = 8;  // keeps the CPU reference training step fast
      break;
    case Scale::small:
      plan.workers = 4; plan.batch_size = 32; plan.image = {144, 128, 3}; plan.model_bytes = 2560 * MiB;
      break;
    case Scale::full:
      plan.workers = 8; plan.batch_size = 64; plan.image = {256, 224, 3}; plan.model_bytes = 5 * GiB;
      break;
  }
  return plan;
}

std::size_t modelled_context_bytes(std::size_t budget) {
  for (const memory::GpuProfile& profile : memory::gpu_profiles()) {
    if (profile.budget() == budget) return profile.context_bytes;
  }
  return memory::find_gpu_profile("h200")->context_bytes;
}

SpawnMeasurements run_spawn_story(const SpawnStoryOptions& options, RunContext& context) {
  Device& device = context.device();
  memory::CachingAllocator& allocator = context.allocator();
  const std::size_t context_bytes = modelled_context_bytes(allocator.config().budget);
  SpawnMeasurements m;
  m.workers = options.workers;

  // The training process builds its model first, as a training script does before iterating
  // its DataLoader (PyTorch starts the workers at the first iteration).
  Tensor model;
  {
    // The rest of a bigger model's resident state, so the budgets match real sizes.
    memory::TagScope tag(memory::Tag::weights);
    model = Tensor::empty(device, {static_cast<std::int64_t>(options.model_bytes / sizeof(float))}, DType::f32);
    model.fill(0.01);
  }
  const Shape batch_shape = {options.batch_size, options.image.crop_size, options.image.crop_size,
                             options.image.channels};
  DenoiserConfig denoiser_config;
  denoiser_config.channels = options.image.channels;
  denoiser_config.hidden = options.conv_out_channels;
  denoiser_config.seed = options.seed;
  ConvDenoiser denoiser(device, batch_shape, denoiser_config);
  Tensor losses;  // one loss per step, read back once after the loop (no per-step sync)
  {
    memory::TagScope tag(memory::Tag::activations);
    losses = Tensor::zeros(device, {std::max(1, context.steps())}, DType::f32);
  }

  LoaderOptions loader_options;
  loader_options.device_kind = device.kind();
  loader_options.start = options.start;
  loader_options.workers = options.workers;
  loader_options.batch_size = options.batch_size;
  loader_options.image = options.image;
  loader_options.batches = context.steps();
  loader_options.seed = options.seed;
  loader_options.simulated_context_bytes = context_bytes;

  // broken-fork: CUDA is initialised in this process before the workers are forked (on cuda the
  // device already did it; on host/dry the flag stands for it and travels through fork()).
  SimulatedCudaInit simulated(options.start == WorkerStart::fork_after_cuda && !device.is_cuda());
  if (options.start == WorkerStart::fork_after_cuda && device.is_cuda()) {
    const std::string error = spawn_cuda::create_context();
    if (!error.empty()) throw std::runtime_error(error);
  }

  const std::size_t used_before = device.is_cuda() ? spawn_cuda::device_used_bytes() : 0;
  std::unique_ptr<BatchLoader> loader;
  try {
    loader = std::make_unique<BatchLoader>(loader_options);
  } catch (const WorkerStartError& error) {
    m.contexts_created = 1;
    record(m, context);
    context.set_metric("forked_worker_failures", options.workers);
    context.note(error.what());
    throw;
  }
  measure_worker_contexts(*loader, device, used_before, context_bytes, m);
  ExternalHolders holders;
  for (std::size_t i = 0; i < m.worker_pids.size(); ++i) {
    if (m.worker_device_bytes[i] > 0) {
      holders.pids.push_back(m.worker_pids[i]);
      holders.bytes.push_back(m.worker_device_bytes[i]);
    }
  }
  context.note(std::to_string(options.workers) + " loader workers (" + worker_start_name(options.start) +
               "): " + std::to_string(m.contexts_created) + " CUDA contexts, " +
               format_size(m.external_bytes) + " held by workers (" + m.memory_method + ")");
  auto device_used_now = [&] {
    if (device.is_cuda()) return spawn_cuda::device_used_bytes();
    return static_cast<std::size_t>(allocator.stats().reserved.current) + context_bytes + m.external_bytes;
  };
  m.device_used_bytes = device_used_now();
  record(m, context);

  const std::size_t batch_bytes = loader->batch_pixel_floats() * sizeof(float);
  BatchUploader uploader(device, batch_bytes);
  // The GPU's busy time: the training steps, timed on the compute stream (no per-step sync).
  OpProfiler consumer_time(device);
  const auto loop_start = std::chrono::steady_clock::now();
  context.set_warmup_steps(1);  // step 0 loads the denoiser's kernels: out of the record's steady rate
  for (int step = 0; step < context.steps(); ++step) {
    context.begin_step(step);
    // The device-level check: the workers' contexts share the card with this process.
    require_device_room(allocator, batch_bytes, memory::Tag::data, holders);
    Tensor images;
    {
      memory::TagScope tag(memory::Tag::data);
      images = Tensor::empty(device, batch_shape, DType::f32);
    }
    const BatchLoader::Batch batch = loader->next();
    uploader.upload(batch.pixels, images);
    loader->release(batch);
    // The consumer: one training step of the denoiser on this batch.
    {
      ProfileRange busy(kConsumerRange);
      denoiser.train_step(images, losses.slice(step, step + 1));
    }
    m.device_used_bytes = std::max(m.device_used_bytes, device_used_now());
    context.add_work(options.batch_size, "samples/s");
    context.end_step();
    ++m.batches;
  }
  double consumer_seconds = 0;  // waits for the device on cuda
  for (const OpProfiler::Total& total : consumer_time.totals()) {
    if (total.name == kConsumerRange) consumer_seconds = total.milliseconds / 1e3;
  }
  const double loop_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  m.samples_per_second = loop_seconds > 0 ? static_cast<double>(m.batches * options.batch_size) / loop_seconds : 0;
  m.loader_wait_fraction = loop_seconds > 0 ? std::min(1.0, loader->wait_seconds() / loop_seconds) : 0;
  m.gpu_idle_fraction = loop_seconds > 0 ? std::clamp(1.0 - consumer_seconds / loop_seconds, 0.0, 1.0) : 0;
  if (device.kind() != DeviceKind::dry && m.batches > 0) {
    const std::vector<float> history = losses.to_host_f32();
    m.losses.assign(history.begin(), history.begin() + m.batches);
    m.final_loss = m.losses.back();
    context.set_metric("first_loss", m.losses.front());
    context.set_metric("final_loss", m.final_loss);
  }
  record(m, context);
  context.set_metric("samples_per_second", m.samples_per_second);
  context.set_metric("gpu_idle_fraction", m.gpu_idle_fraction);
  context.set_metric("loader_wait_fraction", m.loader_wait_fraction);
  context.set_metric("loader_wait_seconds", loader->wait_seconds());
  context.set_metric("model_parameters", static_cast<double>(denoiser.parameter_count()));
  return m;
}

SpawnScenario::SpawnScenario()
    : DeclaredScenario(
          {"spawn",
           "data-loader workers that touch CUDA at start-up: one context per worker fills the card",
           {
               {kBrokenSpawn, "re-executed workers create a CUDA context in start-up: +1 context per worker",
                Expect::oom},
               {kBrokenFork, "workers fork()ed after CUDA init: their first CUDA call fails", Expect::error},
               {kFixed, "worker check first in main(), CPU-only workers: one context for any N", Expect::ok},
           },
           {"1GiB", "4GiB", "rtx4060ti-8g"},
           {12, 24, 16}}) {}

std::vector<KnobSpec> SpawnScenario::knobs() const {
  return {KnobSpec::integer("workers", "data-loader worker processes (num_workers)", 0, 64)};
}

std::map<std::string, std::string> SpawnScenario::variant_knobs(const std::string&, Scale scale) const {
  return {{"workers", std::to_string(spawn_plan(scale).workers)}};
}

void SpawnScenario::run(const std::string& variant, RunContext& context) const {
  const SpawnPlan plan = spawn_plan(context.scale());
  SpawnStoryOptions options;
  options.workers = static_cast<int>(knobs_of(variant, context).integer("workers"));
  options.batch_size = plan.batch_size;
  options.image = plan.image;
  options.model_bytes = plan.model_bytes;
  options.conv_out_channels = plan.conv_out_channels;
  if (variant == kBrokenSpawn) {
    options.start = WorkerStart::spawn_touching_cuda;  // THE BUG: CUDA before the worker check
  } else if (variant == kBrokenFork) {
    options.start = WorkerStart::fork_after_cuda;      // THE BUG: fork() after CUDA init
  } else if (variant == kFixed) {
    options.start = WorkerStart::spawn_clean;          // THE FIX: the check first, CPU-only workers
  } else {
    throw std::invalid_argument("spawn: unknown variant '" + variant + "'");
  }
  run_spawn_story(options, context);
}

OOMLAB_REGISTER_SCENARIO(SpawnScenario);

}  // namespace oomlab::scenarios
