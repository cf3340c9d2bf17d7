#include "scenarios/common/training_loop.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/memory/tags.hpp"
#include "kernels/core/random_indices.hpp"
#include "scenarios/common/nccl_ranks.hpp"
#include "scenarios/models/transformer/activation_tensors.hpp"
#include "scenarios/models/transformer/communicator.hpp"
#include "scenarios/models/transformer/trainer.hpp"
#include "scenarios/models/transformer/transformer.hpp"

namespace oomlab::scenarios {
namespace {

// Seeded random tokens; the targets are the tokens shifted by one, as in language modelling.
// Sharded over N ranks, the seed makes the whole batch of N x micro_batch sequences and rank r
// takes its micro_batch of them: together the ranks train on what one GPU would with the batch.
model::MicroBatch token_batch(Device& device, const TrainingPlan& plan, std::uint32_t seed, int rank = 0,
                              int ranks = 1) {
  memory::TagScope tag(memory::Tag::data);
  const Shape shape{plan.micro_batch, plan.seq};
  // dry plans the two tensors and holds no values: making the tokens on the host would cost it
  // memory and time that grow with the batch it plans (12.6 GB at batch 1M), on the backend
  // whose point is to need neither. The allocations are the same as from_host's.
  if (device.is_dry()) return {Tensor::empty(device, shape, DType::i32), Tensor::empty(device, shape, DType::i32)};
  const std::size_t n = static_cast<std::size_t>(plan.micro_batch * (plan.seq + 1));
  const std::vector<float> stream = random_indices(n * static_cast<std::size_t>(ranks), plan.config.vocab, seed);
  std::vector<float> tokens, targets;
  tokens.reserve(n);
  targets.reserve(n);
  for (std::int64_t b = rank * plan.micro_batch; b < (rank + 1) * plan.micro_batch; ++b) {
    const auto row = static_cast<std::size_t>(b * (plan.seq + 1));
    tokens.insert(tokens.end(), stream.begin() + row, stream.begin() + row + plan.seq);
    targets.insert(targets.end(), stream.begin() + row + 1, stream.begin() + row + 1 + plan.seq);
  }
  return {Tensor::from_host(device, shape, DType::i32, tokens),
          Tensor::from_host(device, shape, DType::i32, targets)};
}

// A rank's micro-batches, the same every step: the loss must fall as the model memorises them.
std::vector<model::MicroBatch> rank_batches(Device& device, const TrainingPlan& plan, int rank, int ranks) {
  std::vector<model::MicroBatch> batches;
  for (int i = 0; i < plan.micro_batches; ++i) {
    batches.push_back(token_batch(device, plan, 100 + static_cast<std::uint32_t>(i), rank, ranks));
  }
  return batches;
}

// One rank of a sharded run beyond the first: its own device (the run's kind and allocator
// settings: its own budget), model, optimizer and batches.
struct OtherRank {
  std::unique_ptr<Device> device;
  std::unique_ptr<model::Transformer> model;
  std::unique_ptr<model::Trainer> trainer;
  std::vector<model::MicroBatch> batches;
};

// Runs every rank's step, rank 0 here and the others each in a thread; a failing rank aborts the
// communicator so no rank waits for it. Rethrows rank 0's failure, else the first other one.
model::StepReport step_all_ranks(model::Trainer& first, const std::vector<model::MicroBatch>& batches,
                                 std::vector<OtherRank>& others, model::Communicator* communicator,
                                 bool inject_overflow, double& mean_loss) {
  std::vector<std::exception_ptr> failures(others.size() + 1);
  std::vector<float> losses(others.size() + 1, 0.0f);
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < others.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        losses[r + 1] = others[r].trainer->step(others[r].batches, inject_overflow).loss;
      } catch (...) {
        failures[r + 1] = std::current_exception();
        if (communicator) communicator->abort();
      }
    });
  }
  model::StepReport report;
  try {
    report = first.step(batches, inject_overflow);
    losses[0] = report.loss;
  } catch (...) {
    failures[0] = std::current_exception();
    if (communicator) communicator->abort();
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& failure : failures) {
    if (!failure) continue;
    try {
      std::rethrow_exception(failure);
    } catch (const model::CommunicatorAborted&) {
      continue;  // woken by another rank's failure: that one is the story
    }
  }
  double sum = 0;
  for (float loss : losses) sum += loss;
  mean_loss = sum / static_cast<double>(losses.size());
  return report;
}

// Each rank's loss is over its own part of the batch: the run's is their mean, as in one process.
void mean_losses_over_ranks(RunContext& context, const std::vector<RunRecord>& others) {
  for (const char* name : {"first_loss", "last_loss"}) {
    const auto mine = context.metrics().find(name);
    if (mine == context.metrics().end()) continue;
    double sum = mine->second;
    for (const RunRecord& other : others) sum += other.metrics.at(name);
    context.set_metric(name, sum / static_cast<double>(others.size() + 1));
  }
}

}  // namespace

void run_training(const TrainingPlan& plan, RunContext& context) {
  Device& device = context.device();
  const auto log = [&](const std::string& line) { context.note(line); };
  const int ranks = std::max(1, plan.options.shard_ranks);
  context.note(model::describe_memory_plan(plan.config, plan.options, plan.micro_batch, plan.seq));
  if (plan.config.sliding_window > 0 && plan.seq > plan.config.sliding_window) {
    context.note(plan.config.name + "'s sliding_window " + std::to_string(plan.config.sliding_window) +
                 " is not modelled: attention here is full causal over T = " + std::to_string(plan.seq) +
                 " (the same memory with fused attention; naive's T x T scores are what a window would cut)");
  }
  context.set_metric("planned_activation_bytes",
                     static_cast<double>(model::block_activation_bytes(plan.config, plan.options,
                                                                       plan.micro_batch, plan.seq) *
                                             (plan.options.checkpointing ? 1 : plan.config.layers) +
                                         model::outer_activation_bytes(plan.config, plan.options,
                                                                       plan.micro_batch, plan.seq)));
  // Sharded on a GPU: one process per GPU through NCCL (this one is rank 0 unless the runner
  // started it as another); elsewhere every rank in this process (dry, host).
  std::unique_ptr<NcclRanks> nccl;
  if (device.is_cuda() && plan.options.shard_ranks > 0) {
    const std::string why = model::nccl_unavailable_reason();
    if (why.empty()) nccl = std::make_unique<NcclRanks>(context, ranks);
    else context.note("NCCL cannot be used (" + why + "): the one rank's collectives are copies");
  }
  const int rank = nccl ? nccl->rank() : 0;
  std::unique_ptr<model::Communicator> communicator;
  if (ranks > 1 && !nccl) communicator = std::make_unique<model::Communicator>(ranks);
  model::Transformer transformer(device, plan.config, plan.options, 1234, log,
                                 {rank, ranks, communicator.get(), nccl ? &nccl->group() : nullptr});
  model::Trainer trainer(transformer, log);
  context.set_metric("optimizer_device_bytes", static_cast<double>(trainer.device_state_bytes()));
  context.set_metric("optimizer_host_bytes", static_cast<double>(trainer.host_state_bytes()));

  const std::vector<model::MicroBatch> batches = rank_batches(device, plan, rank, ranks);
  // Sharded in this process: the other ranks, each on its own device of the same kind, settings and
  // budget (this process's record is rank 0's, the largest shard).
  std::vector<OtherRank> others(nccl ? 0 : static_cast<std::size_t>(ranks - 1));
  for (std::size_t i = 0; i < others.size(); ++i) {
    OtherRank& other = others[i];
    const int r = static_cast<int>(i) + 1;
    other.device = std::make_unique<Device>(device.kind(), device.allocator().config());
    other.model = std::make_unique<model::Transformer>(*other.device, plan.config, plan.options, 1234, model::LogFn{},
                                                       model::ShardGroup{r, ranks, communicator.get()});
    other.trainer = std::make_unique<model::Trainer>(*other.model);
    other.batches = rank_batches(*other.device, plan, r, ranks);
  }
  const double tokens_per_step =
      static_cast<double>(plan.micro_batch * plan.seq * plan.micro_batches) * static_cast<double>(ranks);
  int skipped = 0;
  context.set_warmup_steps(1);  // step 0 loads the kernels and tunes cuBLASLt: out of the steady rate
  for (int step = 0; step < context.steps(); ++step) {
    context.begin_step(step);
    double loss = 0;
    const model::StepReport report =
        step_all_ranks(trainer, batches, others, communicator.get(), step == plan.overflow_step, loss);
    context.end_step();
    context.add_work(tokens_per_step, "tokens/s");
    if (!report.applied) {
      ++skipped;
      context.note("step " + std::to_string(step) + ": gradients overflowed at loss scale " +
                   std::to_string(report.loss_scale) + "; step skipped, scale halved");
    }
    if (!device.is_dry()) {
      if (step == 0) context.set_metric("first_loss", loss);
      context.set_metric("last_loss", loss);
    }
  }
  if (nccl) {
    context.set_metric("nccl_external_bytes", static_cast<double>(nccl->group().external_bytes()));
    const std::vector<RunRecord> ranks_records = nccl->finish();
    if (!ranks_records.empty()) {
      context.set_metric("last_rank_peak_allocated", static_cast<double>(ranks_records.back().memory.peak_allocated));
    }
    mean_losses_over_ranks(context, ranks_records);
  } else if (ranks > 1) {
    context.set_metric("last_rank_peak_allocated",
                       static_cast<double>(others.back().device->allocator().stats().allocated.peak));
  }
  if (ranks > 1) context.set_metric("ranks", ranks);
  context.set_metric("skipped_steps", skipped);
  if (plan.options.offload_optimizer) {
    const auto bytes = static_cast<double>(trainer.offload_bytes_per_step());
    context.set_metric("offload_bytes_per_step", bytes);
    if (const auto link = trainer.measure_offload_link()) {  // cuda: the physical limit of this variant
      context.set_metric("link_h2d_bytes_per_s", link->h2d);
      context.set_metric("link_d2h_bytes_per_s", link->d2h);
      context.set_metric("link_both_bytes_per_s", link->both);
      context.set_metric("offload_transfer_floor_s", bytes / link->both);
      char line[320];
      std::snprintf(line, sizeof line,
                    "offload: each step moves %s of optimizer state (in and out); the pinned link measured "
                    "now: %.1f GB/s in, %.1f GB/s out, %.1f GB/s both at once, so the transfers alone take "
                    "at least %.2f s per step",
                    format_size(trainer.offload_bytes_per_step()).c_str(), link->h2d / 1e9, link->d2h / 1e9,
                    link->both / 1e9, bytes / link->both);
      context.note(line);
    }
  }
  context.set_metric("final_loss_scale", trainer.scaler().scale);
}

}  // namespace oomlab::scenarios
