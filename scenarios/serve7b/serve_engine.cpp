#include "scenarios/serve7b/serve_engine.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "harness/memory/alloc_rounding.hpp"
#include "harness/memory/tags.hpp"
#include "kernels/attention/attention.hpp"
#include "kernels/core/check.hpp"
#include "kernels/transformer/embedding.hpp"
#include "kernels/transformer/matmul.hpp"
#include "kernels/transformer/rmsnorm.hpp"
#include "kernels/transformer/swiglu.hpp"
#include "scenarios/models/transformer/head_layout.hpp"

namespace oomlab::serve {
namespace {

using memory::Tag;
using memory::TagScope;
using model::Projection;

model::Precision precision_of(DType weights) {
  if (weights == DType::f32) return model::Precision::f32;
  if (weights == DType::bf16) return model::Precision::bf16;
  throw std::invalid_argument("serve7b: weights are f32 or bf16");
}

Tensor i32_tensor(Device& device, const std::vector<std::int32_t>& values) {
  Tensor t = Tensor::empty(device, {static_cast<std::int64_t>(values.size())}, DType::i32);
  t.copy_from_host(values.data(), values.size() * sizeof(std::int32_t));
  return t;
}

}  // namespace

ServeEngine::ServeEngine(Device& device, const EngineOptions& options, std::uint32_t seed)
    : device_(device), options_(options) {
  const model::TransformerConfig& c = options_.config;
  OOMLAB_CHECK(!c.is_gpt2(),
               "serve7b serves LLaMA-style models (RoPE at each sequence's position); " << c.name << " is GPT-2 style");
  layout_ = {c.layers, c.kv_head_count(), c.head_dim(), options_.kv_dtype};
  model::TrainOptions train;  // only the precision matters: no gradients or optimizer are made
  train.precision = precision_of(options_.weights_dtype);
  train.attention = model::AttentionKind::fused;
  model_ = std::make_unique<model::Transformer>(device_, c, train, seed);
}

std::size_t ServeEngine::block_reserved_bytes() const {
  const std::size_t bytes = layout_.slot_bytes() * static_cast<std::size_t>(options_.block_tokens);
  const std::size_t rounded = memory::round_request(bytes, device_.allocator().config().roundup_power2_divisions);
  if (rounded >= memory::kMinLargeAlloc) return memory::allocation_size(rounded);
  const std::size_t segment = memory::allocation_size(rounded);  // 2 MiB or 20 MiB, shared
  return segment / (segment / rounded);
}

std::int64_t ServeEngine::block_tokens_of(const SequenceCache& cache) const {
  return options_.cache == CacheKind::paged ? options_.block_tokens : cache.capacity;
}

std::int64_t ServeEngine::kernel_block_tokens() const {
  switch (options_.cache) {
    case CacheKind::paged: return options_.block_tokens;
    case CacheKind::growing: return 0;  // each sequence's one block, as long as its context
    case CacheKind::padded: return caches_.empty() ? 1 : caches_.begin()->second.capacity;
  }
  return 1;
}

void ServeEngine::begin_static_batch(const std::vector<int>& requests, int slots_each) {
  OOMLAB_CHECK(options_.cache == CacheKind::padded, "begin_static_batch: padded caches only");
  TagScope tag(Tag::data);
  const std::size_t each = layout_.slot_bytes() * static_cast<std::size_t>(slots_each);
  // THE PROBLEM: every request reserves the batch's longest prompt + output, for the whole batch.
  batch_cache_ = Tensor::empty(device_, {static_cast<std::int64_t>(requests.size()), static_cast<std::int64_t>(each)},
                               DType::i8);
  kv_bytes_ += batch_cache_.nbytes();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    caches_[requests[i]] = {{batch_cache_.slice(static_cast<std::int64_t>(i), static_cast<std::int64_t>(i) + 1)},
                            slots_each};
  }
}

void ServeEngine::end_static_batch() {
  if (options_.cache == CacheKind::padded) {
    kv_bytes_ -= batch_cache_.nbytes();
    caches_.clear();
    batch_cache_.reset();
    return;
  }
  std::vector<int> requests;
  for (const auto& [request, cache] : caches_) requests.push_back(request);
  for (int request : requests) release(request);
}

void ServeEngine::ensure_slots(int request, int slots) {
  TagScope tag(Tag::data);
  SequenceCache& cache = caches_[request];
  if (cache.capacity >= slots) return;
  if (options_.cache == CacheKind::growing) {
    // THE PROBLEM: torch.cat-style growth: a new tensor one step longer, the old copied and freed;
    // sizes that never repeat leave freed blocks no later request fits.
    Tensor grown = Tensor::empty(device_, {static_cast<std::int64_t>(layout_.slot_bytes()) * slots}, DType::i8);
    if (!cache.blocks.empty()) {
      ops::kv_copy_block(grown, slots, cache.blocks[0], cache.capacity, layout_);
      kv_bytes_ -= cache.blocks[0].nbytes();
    }
    kv_bytes_ += grown.nbytes();
    cache.blocks = {grown};
    cache.capacity = slots;
    return;
  }
  OOMLAB_CHECK(options_.cache == CacheKind::paged, "ensure_slots: a padded cache is sized by its batch");
  const std::int64_t block_bytes = static_cast<std::int64_t>(layout_.slot_bytes()) * options_.block_tokens;
  while (cache.capacity < slots) {  // THE FIX: a block at a time, as the sequence reaches it
    cache.blocks.push_back(Tensor::empty(device_, {block_bytes}, DType::i8));
    cache.capacity += options_.block_tokens;
    kv_bytes_ += static_cast<std::size_t>(block_bytes);
  }
}

void ServeEngine::release(int request) {
  auto found = caches_.find(request);
  if (found == caches_.end()) return;
  for (const Tensor& block : found->second.blocks) kv_bytes_ -= block.nbytes();
  caches_.erase(found);
}

std::int64_t ServeEngine::blocks_held(int request) const {
  auto found = caches_.find(request);
  return found == caches_.end() ? 0 : static_cast<std::int64_t>(found->second.blocks.size());
}

std::int64_t ServeEngine::capacity(int request) const {
  auto found = caches_.find(request);
  return found == caches_.end() ? 0 : found->second.capacity;
}

std::int64_t ServeEngine::slot_address(const SequenceCache& cache, std::int64_t t) const {
  const std::int64_t block_tokens = block_tokens_of(cache);
  const auto block = static_cast<std::size_t>(t / block_tokens);
  OOMLAB_CHECK(t < cache.capacity && block < cache.blocks.size(), "serve7b: token " << t << " past the cache's "
                                                                                    << cache.capacity << " slots");
  return reinterpret_cast<std::int64_t>(cache.blocks[block].data()) +
         static_cast<std::int64_t>(layout_.vector_offset(0, t % block_tokens, block_tokens));
}

void ServeEngine::append(std::int64_t layer, const Tensor& slots, const std::vector<std::int64_t>& block_tokens,
                         const Tensor& fused) {
  if (std::adjacent_find(block_tokens.begin(), block_tokens.end(), std::not_equal_to<>()) == block_tokens.end()) {
    ops::kv_append(layout_, layer, slots, block_tokens.front(), fused);
    return;
  }
  for (std::size_t i = 0; i < block_tokens.size(); ++i) {  // grown caches: a block length each
    const auto row = static_cast<std::int64_t>(i);
    ops::kv_append(layout_, layer, slots.slice(row, row + 1), block_tokens[i], fused.slice(row, row + 1));
  }
}

Tensor ServeEngine::slots_tensor(const std::vector<std::int64_t>& addresses) const {
  Tensor t = Tensor::empty(device_, {static_cast<std::int64_t>(addresses.size())}, DType::i64);
  t.copy_from_host(addresses.data(), addresses.size() * sizeof(std::int64_t));
  return t;
}

template <class Attention>
void ServeEngine::blocks_forward(Tensor& x, const Tensor& positions, const Tensor& slots,
                                 const std::vector<std::int64_t>& block_tokens, Attention&& attention) {
  const model::TransformerConfig& c = options_.config;
  const std::int64_t rows = x.dim(0), heads = c.heads, kv_heads = c.kv_head_count(), dim = c.head_dim();
  const DType cd = x.dtype();
  model::ParameterTensors& p = model_->params();
  const auto& projections = model_->projections();
  const Tensor none;
  const ops::MatmulOptions linear{false, true, false, false};  // y = x W^T
  for (std::int64_t l = 0; l < c.layers; ++l) {
    Tensor attn_out;
    {
      Tensor normed = Tensor::empty(device_, {rows, c.channels}, cd);
      Tensor rstd = Tensor::empty(device_, {rows}, DType::f32);
      ops::rmsnorm_forward(normed, rstd, x, model::layer_of(p.ln1_w, l));
      Tensor qkv = Tensor::empty(device_, {rows, c.qkv_width()}, cd);
      ops::matmul(qkv, normed, projections.weight(Projection::qkv, l, p), model::layer_of(p.qkv_b, l), linear);
      Tensor fused = qkv.view({rows, heads + 2 * kv_heads, dim});
      ops::rope_at_positions(fused, heads + kv_heads, positions, static_cast<float>(c.rope_theta));
      if (slots.defined()) append(l, slots, block_tokens, fused);
      attn_out = attention(l, fused);
    }
    // The skip connections are added by the projections' epilogues (x + W a), not by passes of
    // their own: two launches a layer fewer, which a token at batch 1 is made of.
    Tensor summed = Tensor::empty(device_, {rows, c.channels}, cd);
    ops::matmul(summed, attn_out.view({rows, c.q_width()}), projections.weight(Projection::attn_out, l, p),
                model::layer_of(p.attn_proj_b, l), linear, x);
    attn_out.reset();
    x = summed;
    summed.reset();

    Tensor normed = Tensor::empty(device_, {rows, c.channels}, cd);
    Tensor rstd = Tensor::empty(device_, {rows}, DType::f32);
    ops::rmsnorm_forward(normed, rstd, x, model::layer_of(p.ln2_w, l));
    Tensor gate = Tensor::empty(device_, {rows, c.ffn}, cd), up = Tensor::empty(device_, {rows, c.ffn}, cd);
    ops::matmul(gate, normed, projections.weight(Projection::mlp_in, l, p), none, linear);
    ops::matmul(up, normed, projections.weight(Projection::mlp_up, l, p), none, linear);
    Tensor hidden = Tensor::empty(device_, {rows, c.ffn}, cd);
    ops::swiglu_forward(hidden, gate, up);
    gate.reset();
    up.reset();
    Tensor down = Tensor::empty(device_, {rows, c.channels}, cd);
    ops::matmul(down, hidden, projections.weight(Projection::mlp_down, l, p), none, linear, x);
    x = down;
  }
}

std::vector<std::int32_t> ServeEngine::next_tokens(const Tensor& last_rows) {
  const model::TransformerConfig& c = options_.config;
  model::ParameterTensors& p = model_->params();
  const std::int64_t rows = last_rows.dim(0);
  Tensor normed = Tensor::empty(device_, {rows, c.channels}, last_rows.dtype());
  Tensor rstd = Tensor::empty(device_, {rows}, DType::f32);
  ops::rmsnorm_forward(normed, rstd, last_rows, p.lnf_w);
  Tensor logits = Tensor::empty(device_, {rows, c.padded_vocab()}, last_rows.dtype());
  ops::matmul(logits, normed, c.tied_embeddings ? p.wte : p.lm_head, Tensor(), {false, true, false, false});
  Tensor tokens = Tensor::empty(device_, {rows}, DType::i32);
  ops::greedy_argmax(tokens, logits, c.vocab);
  std::vector<std::int32_t> out(static_cast<std::size_t>(rows), 0);
  tokens.copy_to_host(out.data(), out.size() * sizeof(std::int32_t));
  return out;
}

std::int32_t ServeEngine::prefill(int request, const std::vector<std::int32_t>& tokens, bool write_cache) {
  TagScope tag(Tag::activations);
  const model::TransformerConfig& c = options_.config;
  const auto rows = static_cast<std::int64_t>(tokens.size());
  const DType cd = options_.weights_dtype, ad = model::attention_dtype(model::AttentionKind::fused);
  std::vector<std::int32_t> positions(tokens.size());
  std::vector<std::int64_t> addresses;
  for (std::int64_t t = 0; t < rows; ++t) {
    positions[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(t);
    if (write_cache) addresses.push_back(slot_address(caches_.at(request), t));
  }
  Tensor x = Tensor::empty(device_, {1, rows, c.channels}, cd);
  ops::embedding_forward(x, i32_tensor(device_, tokens).view({1, rows}), model_->params().wte, Tensor());
  x = x.view({rows, c.channels});
  const Tensor slots = write_cache ? slots_tensor(addresses) : Tensor();
  const std::vector<std::int64_t> block_tokens{write_cache ? block_tokens_of(caches_.at(request)) : 0};
  blocks_forward(x, i32_tensor(device_, positions), slots, block_tokens, [&](std::int64_t, const Tensor& fused) {
    // Prefill attends within its own tokens: the fused (flash) kernel, memory linear in T.
    Tensor q = Tensor::empty(device_, {1, c.heads, rows, c.head_dim()}, ad);
    Tensor k = Tensor::empty(device_, {1, c.kv_head_count(), rows, c.head_dim()}, ad);
    Tensor v = Tensor::empty(device_, {1, c.kv_head_count(), rows, c.head_dim()}, ad);
    model::heads_from_tokens({&q, &k, &v}, fused.view({1, rows, c.qkv_width()}));
    Tensor heads_out = Tensor::empty(device_, q.shape(), ad);
    Tensor lse = Tensor::empty(device_, ops::attention_lse_shape(q), DType::f32);
    ops::attention_fused_forward(q, k, v, heads_out, lse);
    Tensor out = Tensor::empty(device_, {rows, c.heads, c.head_dim()}, cd);
    Tensor out_tokens = out.view({1, rows, c.q_width()});
    model::tokens_from_heads(out_tokens, {&heads_out});
    return out;
  });
  return next_tokens(x.slice(rows - 1, rows))[0];
}

std::vector<std::int32_t> ServeEngine::decode(const std::vector<int>& requests,
                                              const std::vector<std::int32_t>& last_tokens,
                                              const std::vector<int>& contexts) {
  TagScope tag(Tag::activations);
  const model::TransformerConfig& c = options_.config;
  const auto rows = static_cast<std::int64_t>(requests.size());
  std::int64_t max_blocks = 1, max_context = 1;
  for (int request : requests)
    max_blocks = std::max<std::int64_t>(max_blocks, static_cast<std::int64_t>(caches_.at(request).blocks.size()));
  std::vector<std::int64_t> table(static_cast<std::size_t>(rows * max_blocks), 0), addresses, block_tokens;
  std::vector<std::int32_t> positions;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const SequenceCache& cache = caches_.at(requests[i]);
    // A grown cache is told to the kernel as one block its context long: it must be that long.
    OOMLAB_CHECK(options_.cache != CacheKind::growing || cache.capacity == contexts[i],
                 "serve7b: request " << requests[i] << "'s grown cache holds " << cache.capacity
                                     << " slots for a context of " << contexts[i]);
    block_tokens.push_back(block_tokens_of(cache));
    for (std::size_t b = 0; b < cache.blocks.size(); ++b) {
      table[i * static_cast<std::size_t>(max_blocks) + b] = reinterpret_cast<std::int64_t>(cache.blocks[b].data());
    }
    addresses.push_back(slot_address(cache, contexts[i] - 1));
    positions.push_back(contexts[i] - 1);
    max_context = std::max<std::int64_t>(max_context, contexts[i]);
  }
  Tensor block_table = Tensor::empty(device_, {rows, max_blocks}, DType::i64);
  block_table.copy_from_host(table.data(), table.size() * sizeof(std::int64_t));
  const Tensor lens = i32_tensor(device_, contexts);
  const std::int64_t kernel_tokens = kernel_block_tokens();

  Tensor x = Tensor::empty(device_, {rows, 1, c.channels}, options_.weights_dtype);
  ops::embedding_forward(x, i32_tensor(device_, last_tokens).view({rows, 1}), model_->params().wte, Tensor());
  x = x.view({rows, c.channels});
  blocks_forward(x, i32_tensor(device_, positions), slots_tensor(addresses), block_tokens,
                 [&](std::int64_t l, const Tensor& fused) {
    Tensor out = Tensor::empty(device_, {rows, c.heads, c.head_dim()}, options_.weights_dtype);
    ops::paged_decode_attention(out, fused, layout_, l, block_table, kernel_tokens, lens, max_context);
    return out;
  });
  return next_tokens(x);
}

}  // namespace oomlab::serve
