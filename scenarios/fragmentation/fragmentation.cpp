#include "scenarios/fragmentation/fragmentation.hpp"

#include <chrono>
#include <stdexcept>

#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"
#include "harness/runner/run_context.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::scenarios {
namespace {

const char* const kBroken = "broken";
const char* const kFixedMaxSplit = "fixed-max-split";
const char* const kFixedExpandable = "fixed-expandable";
const char* const kFixedEmptyCache = "fixed-empty-cache";
const char* const kDebugNoCaching = "debug-no-caching";

std::size_t fraction_of(std::size_t budget, double fraction) {
  return static_cast<std::size_t>(static_cast<double>(budget) * fraction) / MiB * MiB;
}

// A block of `bytes` written once, as a real forward pass writes its activations.
Tensor touched_block(Device& device, std::size_t bytes) {
  Tensor block = Tensor::empty(device, {static_cast<std::int64_t>(bytes)}, DType::i8);
  block.zero();
  return block;
}

}  // namespace

FragmentationPlan fragmentation_plan(Scale scale, int steps) {
  FragmentationPlan plan;
  plan.story_budget = memory::parse_budget(FragmentationScenario().budget(scale)).bytes;
  const std::size_t b = plan.story_budget;
  plan.evaluation_batch = fraction_of(b, 0.70);
  // Three activations of different sizes per step; their sum is the same every step, so each
  // step refills the hole the previous one left and the kept tensor lands after it.
  plan.training_activations = {fraction_of(b, 0.05), fraction_of(b, 0.04), fraction_of(b, 0.06)};
  plan.kept_per_step = fraction_of(b, 0.01);
  plan.training_steps = steps;
  plan.checkpoint_buffer = fraction_of(b, 0.60);
  plan.max_split_size = fraction_of(b, 0.10);
  return plan;
}

FragmentationScenario::FragmentationScenario()
    : DeclaredScenario(
          {"fragmentation",
           "OOM with free memory: kept tensors pin a big cached segment; one large request fails",
           {
               {kBroken, "default allocator settings: the checkpoint buffer finds no free block", Expect::oom},
               {kFixedMaxSplit, "max_split_size_mb: big cached blocks are never split by small requests", Expect::ok},
               {kFixedExpandable, "expandable_segments: freed space grows into one mapped range", Expect::ok},
               {kFixedEmptyCache, "empty_cache() after evaluation: training starts from fresh segments", Expect::ok},
               // The debugging tip PYTORCH_NO_CUDA_MEMORY_CACHING=1: no cache, so nothing to fragment
               // (reserved == allocated at every moment) and the checkpoint fits next to the 8 % kept;
               // a debugging mode, not a fix: every tensor costs a cudaMalloc and a cudaFree on cuda.
               {kDebugNoCaching,
                "caching:false (PYTORCH_NO_CUDA_MEMORY_CACHING): every tensor its own segment; fits, reserved = "
                "allocated, slower on cuda",
                Expect::ok},
           },
           {"1GiB", "4GiB", "rtx3060-12g"},
           {8, 8, 8}}) {}

void FragmentationScenario::configure(const std::string& variant, Scale scale,
                                      memory::AllocatorConfig& config) const {
  if (variant == kFixedMaxSplit) {
    config.max_split_size = fragmentation_plan(scale, default_steps(scale)).max_split_size;
  } else if (variant == kFixedExpandable) {
    config.expandable_segments = true;
  } else if (variant == kDebugNoCaching) {
    config.caching = false;
  }
}

void FragmentationScenario::run(const std::string& variant, RunContext& context) const {
  const FragmentationPlan plan = fragmentation_plan(context.scale(), context.steps());
  Device& device = context.device();
  memory::CachingAllocator& allocator = context.allocator();
  double training_bytes_written = 0;  // throughput: bytes the training steps write per second

  // Phase 1: one evaluation batch at a big batch size; its segment stays cached when freed.
  {
    memory::TagScope tag(memory::Tag::activations);
    Tensor evaluation = touched_block(device, plan.evaluation_batch);
  }

  if (variant == kFixedEmptyCache) {
    // THE FIX: hand the cached evaluation segment back before training carves it up. The cost:
    // training's first step must create its segments anew.
    const auto start = std::chrono::steady_clock::now();
    allocator.empty_cache();
    context.set_metric("empty_cache_seconds",
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }

  // Phase 2: training steps. Activations are freed at the end of each step; one small tensor per
  // step is kept (a history of sampled outputs). Best fit places each kept tensor inside the
  // evaluation segment, so that segment can never be returned.
  std::vector<Tensor> kept_history;
  for (int step = 0; step < plan.training_steps; ++step) {
    context.begin_step(step);
    std::vector<Tensor> activations;
    {
      memory::TagScope tag(memory::Tag::activations);
      const std::size_t n = plan.training_activations.size();
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t bytes = plan.training_activations[(i + step) % n];
        activations.push_back(touched_block(device, bytes));
        training_bytes_written += static_cast<double>(bytes);
      }
    }
    {
      memory::TagScope tag(memory::Tag::retained);
      kept_history.push_back(touched_block(device, plan.kept_per_step));
      training_bytes_written += static_cast<double>(plan.kept_per_step);
    }
    activations.clear();
    context.end_step();
  }

  // Phase 3: the checkpoint save gathers the model into one contiguous buffer. It fits the
  // budget next to what is allocated; on `broken` no free block is large enough.
  const memory::MemoryStats before = allocator.stats();
  context.set_metric("free_reserved_before_checkpoint",
                     static_cast<double>(before.reserved.current - before.allocated.current));
  context.set_metric("largest_free_block_before_checkpoint",
                     static_cast<double>(before.largest_free_block));
  {
    memory::TagScope tag(memory::Tag::weights);
    Tensor checkpoint = touched_block(device, plan.checkpoint_buffer);
  }
  context.set_metric("segments_created", static_cast<double>(allocator.stats().segments.total));
  context.add_work(training_bytes_written / 1e9, "GB/s");
}

OOMLAB_REGISTER_SCENARIO(FragmentationScenario);

}  // namespace oomlab::scenarios
