// The model side of serving: LLaMA-style weights (model::Transformer's parameter table, no
// training state), a forward for prefill (one sequence's tokens, attention by the fused kernel)
// and for decode (one token per running sequence, attention over the paged cache), and the KV
// cache kept as the scheduler's CacheKind says. Every allocation goes through the device's
// allocator, so dry plans what cuda allocates: the weights under Tag::weights, the KV cache under
// Tag::data (the requests' own state), the forward's temporaries under Tag::activations.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "kernels/core/tensor.hpp"
#include "kernels/serving/paged_kv.hpp"
#include "scenarios/models/transformer/transformer.hpp"
#include "scenarios/serve7b/serve_scheduler.hpp"

namespace oomlab::serve {

struct EngineOptions {
  model::TransformerConfig config;
  DType weights_dtype = DType::bf16;  // f32 (a model never .half()-ed) or bf16
  DType kv_dtype = DType::bf16;       // bf16 or i8 (absmax per token and head)
  CacheKind cache = CacheKind::paged;
  int block_tokens = 16;              // paged
};

class ServeEngine {
 public:
  // Allocates and seeds the weights (an OomError here is the f32 story: the weights alone).
  ServeEngine(Device& device, const EngineOptions& options, std::uint32_t seed);

  const ops::KvLayout& layout() const { return layout_; }
  std::size_t weight_bytes() const { return model_->parameter_bytes(); }
  // Bytes a paged block reserves from the allocator (its rounding; blocks under 10 MiB share
  // 20 MiB segments).
  std::size_t block_reserved_bytes() const;

  // KV memory, as the cache kind keeps it.
  // padded: one allocation for a static batch, `slots_each` slots per request; ended at once.
  void begin_static_batch(const std::vector<int>& requests, int slots_each);
  void end_static_batch();
  // growing: reallocates the request's cache `slots` long (copying what it held, freeing the old);
  // paged: allocates blocks until it holds `slots`.
  void ensure_slots(int request, int slots);
  void release(int request);                  // growing/paged: frees the request's cache
  std::int64_t blocks_held(int request) const;
  std::int64_t capacity(int request) const;   // slots the request's cache holds
  std::size_t kv_bytes() const { return kv_bytes_; }  // live KV cache bytes now

  // Runs `tokens` (a prompt and the tokens made so far) through the model, writing their K/V into
  // the request's cache (which holds tokens.size() slots), and returns the next token (0 on dry).
  // write_cache false: a profiling pass that writes no cache (the pool is sized after it).
  std::int32_t prefill(int request, const std::vector<std::int32_t>& tokens, bool write_cache = true);
  // One token each: last_tokens[i] at position contexts[i] - 1 of requests[i], whose cache holds
  // contexts[i] slots; returns each next token (0 on dry).
  std::vector<std::int32_t> decode(const std::vector<int>& requests, const std::vector<std::int32_t>& last_tokens,
                                   const std::vector<int>& contexts);

 private:
  struct SequenceCache {
    std::vector<Tensor> blocks;  // paged: blocks; growing: one tensor; padded: its slice of the batch's
    std::int64_t capacity = 0;   // slots
  };
  std::int64_t block_tokens_of(const SequenceCache& cache) const;  // slots in each of its blocks
  std::int64_t kernel_block_tokens() const;  // the block size the decode kernel is told (0: grown caches)
  std::int64_t slot_address(const SequenceCache& cache, std::int64_t t) const;
  // Writes each row's K/V into its slot (block_tokens: each row's block length).
  void append(std::int64_t layer, const Tensor& slots, const std::vector<std::int64_t>& block_tokens,
              const Tensor& fused);
  Tensor slots_tensor(const std::vector<std::int64_t>& addresses) const;
  // Runs the blocks over x (rows, C) in place; `attention` computes each layer's (rows, H*D) output
  // from its fused projection (rows, H + 2Hkv, D), RoPE and the cache append already done.
  template <class Attention>
  void blocks_forward(Tensor& x, const Tensor& positions, const Tensor& slots,
                      const std::vector<std::int64_t>& block_tokens, Attention&& attention);
  std::vector<std::int32_t> next_tokens(const Tensor& last_rows);  // (rows, C) -> argmax of the LM head

  Device& device_;
  EngineOptions options_;
  ops::KvLayout layout_;
  std::unique_ptr<model::Transformer> model_;
  std::map<int, SequenceCache> caches_;
  Tensor batch_cache_;  // padded: the static batch's
  std::size_t kv_bytes_ = 0;
};

}  // namespace oomlab::serve
