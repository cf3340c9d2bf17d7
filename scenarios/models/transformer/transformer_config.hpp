// The transformer's shape (GPT-2 or LLaMA style) and how it is trained (precision, attention
// kernel, checkpointing, gradient accumulation, optimizer offload). Presets by name.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/core/dtype.hpp"
#include "kernels/transformer/adamw.hpp"

namespace oomlab::model {

// gpt2: LayerNorm, GELU MLP, learned positions, biases, LM head tied to the token embedding.
// llama: RMSNorm, SwiGLU MLP, no biases (Qwen2: biases on q, k and v), rotary position
// embeddings on q and k (kernels/transformer/rope.hpp: in place, so they change no memory);
// the LM head separate unless tied_embeddings. Mistral and Qwen2 are this style too.
enum class ModelStyle { gpt2, llama };

// One table of a model's shape: every buffer's size comes from it. A preset fills it below; a
// Hugging Face config.json fills it in hf_config.hpp.
struct TransformerConfig {
  std::string name;
  ModelStyle style = ModelStyle::gpt2;
  std::int64_t vocab = 0;       // V
  std::int64_t max_seq = 0;     // maxT: rows of the position table (gpt2); the longest T allowed
  std::int64_t layers = 0;      // L
  std::int64_t heads = 0;       // H: query heads
  std::int64_t channels = 0;    // C
  std::int64_t ffn = 0;         // F: MLP hidden width (gpt2 4C; llama 11008 at 7B)
  // Grouped-query attention: Hkv key/value heads, each shared by H / Hkv query heads (Llama 3 and
  // Mistral 8 for 32). 0 reads as H: plain multi-head attention, the general case's special one.
  std::int64_t kv_heads = 0;
  // D when a config gives it (head_dim); 0 reads as C / H.
  std::int64_t head_size = 0;
  bool tied_embeddings = false;  // the LM head is the token embedding (gpt2; small Qwen2.5s)
  bool qkv_bias = false;         // biases on q, k, v (gpt2; Qwen2)
  // Recorded from the config so a run says what it modelled. rope_theta is the rotary base (values
  // only). sliding_window (0: none) is not modelled: attention here is full causal, which at
  // T <= window is the same computation, and beyond it asks for no more memory with the fused
  // kernel (linear in T); the naive kernel's T x T scores are what a windowed kernel would shrink.
  double rope_theta = 10000.0;
  std::int64_t sliding_window = 0;
  std::string torch_dtype;   // the checkpoint's dtype ("bfloat16"): recorded, not used
  std::string architecture;  // "LlamaForCausalLM", "GPT2LMHeadModel", ...

  std::int64_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }  // Hkv
  std::int64_t head_dim() const { return head_size > 0 ? head_size : channels / heads; }  // D
  std::int64_t q_width() const { return heads * head_dim(); }          // H*D: q rows, o_proj's input
  std::int64_t kv_width() const { return kv_head_count() * head_dim(); }  // Hkv*D: k_proj's, v_proj's rows
  std::int64_t qkv_width() const { return q_width() + 2 * kv_width(); }  // rows of the fused projection
  // Rows of the token embedding / LM head and columns of the logits: V rounded up to a multiple
  // of 64 (GPT-2's 50257 -> 50304, as llm.c and nanoGPT do). An odd V puts the LM head's GEMM,
  // the largest of the model, on a slow unaligned kernel (about 7x slower on an H200). The
  // padding rows are never looked up and their logits take no part in the loss.
  std::int64_t padded_vocab() const { return (vocab + 63) / 64 * 64; }
  bool is_gpt2() const { return style == ModelStyle::gpt2; }
  // The model's own (unpadded), as Hugging Face counts it (GPT-2's position table included);
  // size_t: 6.7e9 overflows int. Saturates rather than wraps.
  std::size_t parameter_count() const;
};

// Presets with the numbers of their Hugging Face config.json (transformer_config.cpp says which
// repository each comes from): "gpt2-124m", "-350m", "-774m", "-1.5b" (also by the Hub's names
// "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"), "llama-2-7b", "llama-2-13b", "llama-3-8b",
// "llama-3.1-70b", "mistral-7b", "qwen2.5-7b", "qwen2.5-14b", the older "llama-7b", "llama-13b",
// and oomlab's small ones "gpt2-small", "gpt2-tiny", "llama-small", "llama-tiny".
// Throws std::invalid_argument naming the known presets.
TransformerConfig transformer_preset(std::string_view name);
std::vector<std::string> transformer_preset_names();  // the presets, then the aliases
// The alias's preset ("gpt2-medium" -> "gpt2-350m"); empty for a name that is no alias.
std::string transformer_preset_alias_of(std::string_view name);
// The preset with a longer position table (GPT-2 124M at T=4096 for long contexts).
TransformerConfig with_max_seq(TransformerConfig config, std::int64_t max_seq);

// f32: everything in f32. bf16/f16: f32 master weights (optimizer tag) and a bf16/f16 copy the
// forward uses; f16 also scales the loss (dynamic GradScaler).
enum class Precision { f32, bf16, f16 };
const char* precision_name(Precision precision);
DType compute_dtype(Precision precision);

// naive: T x T scores materialised, computed in f32 (as PyTorch's autocast runs softmax in f32).
// fused: flash-style kernel, memory linear in T, computed in bf16 (its dtype on cuda).
// The attention dtype depends only on this choice, never on the device (the one invariant,
// docs/architecture.md); q/k/v are cast on the way in when it differs from the compute dtype.
enum class AttentionKind { naive, fused };
const char* attention_name(AttentionKind kind);
DType attention_dtype(AttentionKind kind);

// Parameter-efficient fine-tuning (LoRA, Hu et al. 2021): the base model is frozen (no
// gradients, no optimizer state) and each targeted block projection gets a trainable low-rank
// adapter (projections.hpp). `attention`: q/k/v (one adapter on the fused projection, as PEFT
// does for GPT-2's c_attn) and the output; `mlp`: gate, up and down (GPT-2: fc and proj).
enum class LoraTargets { all, attention, mlp };
const char* lora_targets_name(LoraTargets targets);

struct LoraOptions {
  int rank = 0;               // 0: no adapters, the whole model trains
  LoraTargets targets = LoraTargets::all;
  bool int8_base = false;     // the frozen block projections stored int8 per row (QLoRA's idea)
  // QLoRA's own base (Dettmers et al. 2023): 4-bit NormalFloat codes, two per byte, an absmax per
  // block of 64 stored as a byte, those bytes' own f32 scale per 256 blocks (double quantisation),
  // as bitsandbytes' Linear4bit. Either int8_base or nf4_base, not both.
  bool nf4_base = false;
  bool quantized_base() const { return int8_base || nf4_base; }
  bool enabled() const { return rank > 0; }
};

struct TrainOptions {
  Precision precision = Precision::f32;
  AttentionKind attention = AttentionKind::naive;
  bool checkpointing = false;      // keep only block inputs; recompute each block in backward
  bool offload_optimizer = false;  // AdamW moments (and f32 master) in host memory, streamed
  bool adam_8bit = false;          // AdamW moments as bytes, block-wise (kernels/transformer/adamw8bit.hpp)
  LoraOptions lora;
  // ZeRO-3 / FSDP: > 0 shards every parameter, its gradient and its optimizer state over this many
  // ranks (each layer gathered whole only while its forward or backward runs; sharding.hpp). This
  // process is rank 0, whose shard is the largest: every rank runs the same schedule.
  int shard_ranks = 0;
  ops::AdamWConfig adamw{3e-4f, 0.9f, 0.95f, 1e-8f, 0.0f};
  float grad_clip = 1.0f;          // global norm; <= 0 disables clipping
  float initial_loss_scale = 65536.0f;  // f16 only
  int loss_scale_growth_interval = 2000;
};

}  // namespace oomlab::model
