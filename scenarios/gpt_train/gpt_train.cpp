#include "scenarios/gpt_train/gpt_train.hpp"

#include <stdexcept>

namespace oomlab::scenarios {
namespace {

using model::AttentionKind;
using model::Precision;

const char* const kBroken = "broken";
const char* const kHalfBatch = "half-batch";
const char* const kBf16 = "bf16";
const char* const kFp16LossScaling = "fp16-loss-scaling";
const char* const kGradAccum = "grad-accum";
const char* const kCheckpointing = "checkpointing";
const char* const kCpuOffload = "cpu-offload";

constexpr int kAccumulationSteps = 4;

// The broken run: the story's model, sequence length and batch, all in f32. f32 attention on
// cuda is the naive kernel (the fused one is bf16), so the T x T probabilities are kept too.
TrainingPlan broken_plan(Scale scale) {
  TrainingPlan plan;
  switch (scale) {
    case Scale::tiny:
      plan.config = model::transformer_preset("gpt2-tiny");
      plan.seq = 32;
      plan.micro_batch = 16;
      break;
    case Scale::small:
      plan.config = model::transformer_preset("gpt2-small");
      plan.seq = 256;
      plan.micro_batch = 32;
      break;
    case Scale::full:
      plan.config = model::transformer_preset("gpt2-124m");
      plan.seq = 1024;
      plan.micro_batch = 32;
      break;
  }
  plan.options.precision = Precision::f32;
  plan.options.attention = AttentionKind::naive;
  // Tiny batches would overflow f16 at PyTorch's 65536 for real; the story injects one overflow.
  plan.options.initial_loss_scale = scale == Scale::full ? 65536.0f : 1024.0f;
  return plan;
}

// Low precision runs use the fused attention kernel (bf16 on cuda), as PyTorch's SDPA would.
void use_low_precision(TrainingPlan& plan, Precision precision) {
  plan.options.precision = precision;
  plan.options.attention = AttentionKind::fused;
}

}  // namespace

TrainingPlan gpt_train_plan(const std::string& variant, Scale scale) {
  TrainingPlan plan = broken_plan(scale);
  if (variant == kBroken) {
    // as is: f32, the full batch in one micro-batch
  } else if (variant == kHalfBatch) {
    plan.micro_batch /= 2;  // THE FIX: half the activations (and half the tokens per step)
  } else if (variant == kBf16) {
    use_low_precision(plan, Precision::bf16);  // THE FIX: 2-byte activations, linear attention
  } else if (variant == kFp16LossScaling) {
    use_low_precision(plan, Precision::f16);   // THE FIX: as bf16, plus a dynamic loss scale
    plan.overflow_step = 1;                    // one injected overflow: skipped, scale halved
  } else if (variant == kGradAccum) {
    plan.micro_batch /= kAccumulationSteps;    // THE FIX: same tokens per step, 4 passes
    plan.micro_batches = kAccumulationSteps;
  } else if (variant == kCheckpointing) {
    plan.options.checkpointing = true;         // THE FIX: keep block inputs, recompute the rest
  } else if (variant == kCpuOffload) {
    use_low_precision(plan, Precision::bf16);
    plan.options.offload_optimizer = true;     // THE FIX: master + moments leave the card
  } else {
    throw std::invalid_argument("gpt_train: unknown variant '" + variant + "'");
  }
  return plan;
}

// Two steps at least: the f16 variant injects its overflow in step 1. Host kernels are slow.
GptTrainScenario::GptTrainScenario()
    : TrainingScenario(
          {"gpt_train",
           "GPT-2 124M training at batch 32: f32 activations overflow a 24 GiB card; the remedy ladder",
           {
               {kBroken, "f32, batch 32, naive attention: activations exceed the card", Expect::oom},
               {kHalfBatch, "f32 at batch 16: half the activations", Expect::ok},
               {kBf16, "bf16 mixed precision (f32 master weights), fused attention", Expect::ok},
               {kFp16LossScaling, "f16 with dynamic loss scaling; one injected overflow is skipped", Expect::ok},
               {kGradAccum, "f32, 4 micro-batches of 8 accumulate into one step of 32", Expect::ok},
               {kCheckpointing, "f32 batch 32, each block's activations recomputed in backward", Expect::ok},
               {kCpuOffload, "bf16 with AdamW master weights and moments in pinned host memory", Expect::ok},
           },
           {"43MiB", "768MiB", "rtx4090"},
           {2, 3, 3}}) {}

OOMLAB_REGISTER_SCENARIO(GptTrainScenario);

}  // namespace oomlab::scenarios
