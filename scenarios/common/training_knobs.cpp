#include "scenarios/common/training_knobs.hpp"

#include <algorithm>
#include <stdexcept>

#include "scenarios/models/transformer/model_choice.hpp"

namespace oomlab::scenarios {
namespace {

model::Precision precision_from(const std::string& name) {
  for (auto precision : {model::Precision::f32, model::Precision::bf16, model::Precision::f16}) {
    if (name == model::precision_name(precision)) return precision;
  }
  throw std::invalid_argument("unknown dtype '" + name + "'");
}

// The preset a config was made from: with_max_seq appends "-T<positions>" to the name.
std::string preset_name(const model::TransformerConfig& config) {
  const std::string& name = config.name;
  const auto suffix = name.rfind("-T");
  if (suffix != std::string::npos && suffix + 2 < name.size() &&
      name.find_first_not_of("0123456789", suffix + 2) == std::string::npos) {
    return name.substr(0, suffix);
  }
  return name;
}

}  // namespace

std::vector<KnobSpec> training_knob_specs() {
  return {
      KnobSpec::choice_or("model", "the model's shapes (no weights are downloaded): a preset (oomlab list --models) or "
                                   "your model's Hugging Face config.json",
                          model::transformer_preset_names(), "a config.json or the folder holding one",
                          [](const std::string& path) { return model::recorded_model_choice(path); }),
      KnobSpec::integer("batch", "sequences per optimizer step (split over micro_batches, and over the gpus "
                                 "when sharded)",
                        1, 1 << 20),
      KnobSpec::integer("seq", "tokens per sequence (T); GPT-2's position table grows to fit", 1, 1 << 20),
      KnobSpec::choice("dtype", "f32; or bf16/f16 mixed precision with f32 master weights (f16 with "
                                "dynamic loss scaling)",
                       {"f32", "bf16", "f16"}),
      KnobSpec::choice("attention", "naive (T x T scores kept) or fused (flash-style, linear in T)",
                       {"naive", "fused"}),
      KnobSpec::boolean("checkpointing", "keep block inputs only; recompute each block in backward"),
      KnobSpec::integer("micro_batches", "gradient accumulation: forward/backward passes per step", 1, 1 << 16),
      KnobSpec::boolean("offload", "AdamW master weights and moments in pinned host memory"),
      KnobSpec::choice("optimizer", "adamw (f32 moments) or adamw8bit (a byte per moment, block-wise; on the device)",
                       {"adamw", "adamw8bit"}),
      KnobSpec::integer("rank", "LoRA: 0 trains every weight; r > 0 freezes the base and trains rank-r adapters",
                        0, 4096),
      KnobSpec::choice("targets", "LoRA: the projections with adapters (attention: q/k/v and output; mlp: "
                                  "gate/up/down or fc/proj)",
                       {"all", "attention", "mlp"}),
      KnobSpec::choice("quantize_base", "LoRA: the frozen base's projections quantised, dequantised at each use "
                                        "(needs rank > 0): true = int8 per-row absmax, nf4 = QLoRA's 4-bit "
                                        "NormalFloat (blocks of 64, double-quantised scales)",
                       {"false", "true", "nf4"}),
      KnobSpec::boolean("shard", "ZeRO-3 / FSDP: parameters, gradients and optimizer state sharded over `gpus` "
                                 "ranks, each layer gathered whole only while it runs"),
      KnobSpec::integer("gpus", "ranks the model is sharded over (needs shard=true when > 1; dry simulates any "
                                "number, rank 0 being the largest shard)",
                        1, 1024),
  };
}

std::map<std::string, std::string> training_knob_values(const TrainingPlan& plan) {
  return {{"model", preset_name(plan.config)},
          {"batch", std::to_string(plan.micro_batch * plan.micro_batches * std::max(1, plan.options.shard_ranks))},
          {"seq", std::to_string(plan.seq)},
          {"dtype", model::precision_name(plan.options.precision)},
          {"attention", model::attention_name(plan.options.attention)},
          {"checkpointing", plan.options.checkpointing ? "true" : "false"},
          {"micro_batches", std::to_string(plan.micro_batches)},
          {"offload", plan.options.offload_optimizer ? "true" : "false"},
          {"optimizer", plan.options.adam_8bit ? "adamw8bit" : "adamw"},
          {"rank", std::to_string(plan.options.lora.rank)},
          {"targets", model::lora_targets_name(plan.options.lora.targets)},
          {"quantize_base", plan.options.lora.nf4_base ? "nf4" : plan.options.lora.int8_base ? "true" : "false"},
          {"shard", plan.options.shard_ranks > 0 ? "true" : "false"},
          {"gpus", std::to_string(std::max(1, plan.options.shard_ranks))}};
}

TrainingPlan with_training_knobs(TrainingPlan plan, const KnobValues& knobs) {
  const auto gpus = static_cast<int>(knobs.integer("gpus"));
  if (gpus > 1 && !knobs.boolean("shard")) {
    throw std::invalid_argument("gpus=" + std::to_string(gpus) + " spreads the model over GPUs by sharding it: "
                                "set shard=true (or use train7b's `sharded` variant)");
  }
  const int ranks = knobs.boolean("shard") ? gpus : 1;
  if (knobs.integer("batch") % ranks != 0) {
    throw std::invalid_argument("batch=" + std::to_string(knobs.integer("batch")) + " is not a multiple of gpus=" +
                                std::to_string(ranks) + ": each GPU takes batch / gpus sequences");
  }
  const std::int64_t batch = knobs.integer("batch") / ranks;  // this rank's
  const std::int64_t micro_batches = knobs.integer("micro_batches");
  if (batch % micro_batches != 0) {
    throw std::invalid_argument("batch=" + std::to_string(batch) +
                                " is not a multiple of micro_batches=" + std::to_string(micro_batches) +
                                ": each micro-batch takes batch / micro_batches sequences");
  }
  const std::int64_t seq = knobs.integer("seq");
  model::TransformerConfig config = model::resolve_model(knobs.text("model"));
  // Learned positions need a row per position: a longer sequence gets a longer table, as
  // long_context's preset does (LLaMA-style models have no table).
  if (config.is_gpt2() && seq > config.max_seq) config = model::with_max_seq(config, seq);
  plan.config = config;
  plan.seq = seq;
  plan.micro_batch = batch / micro_batches;
  plan.micro_batches = static_cast<int>(micro_batches);
  plan.options.precision = precision_from(knobs.text("dtype"));
  plan.options.attention = knobs.text("attention") == "naive" ? model::AttentionKind::naive
                                                               : model::AttentionKind::fused;
  plan.options.checkpointing = knobs.boolean("checkpointing");
  plan.options.offload_optimizer = knobs.boolean("offload");
  plan.options.adam_8bit = knobs.text("optimizer") == "adamw8bit";
  if (plan.options.adam_8bit && plan.options.offload_optimizer) {
    throw std::invalid_argument("optimizer=adamw8bit keeps its moments on the device: it does not combine with "
                                "offload=true");
  }
  plan.options.lora.rank = static_cast<int>(knobs.integer("rank"));
  const std::string targets = knobs.text("targets");
  plan.options.lora.targets = targets == "attention" ? model::LoraTargets::attention
                              : targets == "mlp"     ? model::LoraTargets::mlp
                                                     : model::LoraTargets::all;
  const std::string quantize = knobs.text("quantize_base");
  plan.options.lora.int8_base = quantize == "true";
  plan.options.lora.nf4_base = quantize == "nf4";
  if (plan.options.lora.quantized_base() && !plan.options.lora.enabled()) {
    throw std::invalid_argument("quantize_base=" + quantize + " freezes the base " +
                                (quantize == "nf4" ? "in 4 bits" : "in int8") +
                                ": it needs LoRA adapters to train (set rank > 0, e.g. rank=16)");
  }
  plan.options.shard_ranks = knobs.boolean("shard") ? gpus : 0;
  if (plan.options.shard_ranks > 0 && (plan.options.lora.enabled() || plan.options.offload_optimizer)) {
    throw std::invalid_argument("shard=true trains every weight with its optimizer shard on its GPU: it does not "
                                "combine with LoRA (rank > 0) or offload=true");
  }
  if (plan.options.shard_ranks > 0 && plan.options.precision == model::Precision::f16) {
    throw std::invalid_argument("shard=true with dtype=f16: the loss scaler's overflow check is per rank here; "
                                "use dtype=bf16 (or f32)");
  }
  return plan;
}

}  // namespace oomlab::scenarios
