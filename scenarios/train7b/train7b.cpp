#include "scenarios/train7b/train7b.hpp"

#include <stdexcept>

namespace oomlab::scenarios {
namespace {

const char* const kBroken = "broken";
const char* const kBf16Mixed = "bf16-mixed";
const char* const kAdam8Bit = "8bit-adam";
const char* const kOffload = "offload";
const char* const kLora = "lora";
const char* const kInt8Lora = "int8-lora";
const char* const kSharded = "sharded";
constexpr int kShardedGpus = 2;
constexpr int kLoraRank = 16;

}  // namespace

TrainingPlan train7b_plan(const std::string& variant, Scale scale) {
  TrainingPlan plan;
  switch (scale) {
    case Scale::tiny:
      plan.config = model::transformer_preset("llama-tiny");
      plan.seq = plan.config.max_seq;
      plan.micro_batch = 2;
      break;
    case Scale::small:
      plan.config = model::transformer_preset("llama-small");
      plan.seq = plan.config.max_seq;
      plan.micro_batch = 1;
      break;
    case Scale::full:
      plan.config = model::with_max_seq(model::transformer_preset("llama-7b"), 2048);
      plan.seq = 2048;
      plan.micro_batch = 1;
      break;
  }
  plan.options.checkpointing = true;  // every rung: the optimizer state is the story
  if (variant == kBroken) {
    plan.options.precision = model::Precision::f32;
    plan.options.attention = model::AttentionKind::naive;  // f32 throughout
  } else if (variant == kBf16Mixed || variant == kAdam8Bit || variant == kOffload) {
    plan.options.precision = model::Precision::bf16;
    plan.options.attention = model::AttentionKind::fused;
    plan.options.adam_8bit = variant == kAdam8Bit;         // THE FIX: a byte per moment, not four
    plan.options.offload_optimizer = variant == kOffload;  // THE FIX: master and moments on the host
  } else if (variant == kSharded) {
    plan.options.precision = model::Precision::bf16;
    plan.options.attention = model::AttentionKind::fused;
    plan.options.shard_ranks = kShardedGpus;  // THE FIX: each of 2 GPUs holds half of bf16-mixed's 16 B/param
  } else if (variant == kLora || variant == kInt8Lora) {
    plan.options.precision = model::Precision::bf16;
    plan.options.attention = model::AttentionKind::fused;
    plan.options.lora.rank = kLoraRank;  // THE FIX: the base frozen, 40M adapter weights train
    plan.options.lora.targets = model::LoraTargets::all;
    plan.options.lora.int8_base = variant == kInt8Lora;  // AND: a byte per frozen projection weight
  } else {
    throw std::invalid_argument("train7b: unknown variant '" + variant + "'");
  }
  return plan;
}

Train7bScenario::Train7bScenario()
    : TrainingScenario(
          {"train7b",
           "LLaMA 7B training: 16 bytes/param of weights, grads and AdamW (f32 or bf16-mixed) overflow an "
           "H100 80GB; 8-bit moments fit it, the optimizer in host memory an A100 40GB, LoRA an RTX 4090 "
           "and LoRA on an int8 base an RTX 3060 12GB",
           {
               {kBroken, "f32 weights, grads and AdamW moments: 16 bytes per parameter", Expect::oom},
               {kBf16Mixed, "bf16 weights and grads, f32 master and moments: still 16 bytes per parameter",
                Expect::oom},
               {kAdam8Bit, "bf16 weights and grads, f32 master, 8-bit block-wise AdamW moments: 10 bytes per parameter",
                Expect::ok},
               {kOffload,
                "bf16 weights and grads on the GPU, f32 master and moments in host memory: 4 bytes per parameter",
                Expect::ok},
               {kLora,
                "frozen bf16 base, rank-16 LoRA adapters on all seven projections (f32 AdamW on 40M adapter "
                "weights only): 2 bytes per parameter",
                Expect::ok},
               {kInt8Lora,
                "frozen base with int8 projections (per-row absmax, dequantised at each use) plus LoRA: "
                "about 1 byte per parameter",
                Expect::ok},
               {kSharded,
                "bf16-mixed sharded over 2 GPUs (ZeRO-3 / FSDP; knob gpus=N): weights, grads and AdamW state "
                "16/N bytes per parameter per GPU, each layer gathered whole only while it runs",
                Expect::ok},
           },
           {"36.5MiB", "140MiB", "h100-80g"},
           {3, 3, 2}}) {}

OOMLAB_REGISTER_SCENARIO(Train7bScenario);

}  // namespace oomlab::scenarios
