// A paged KV cache filled with random keys and values on any device, and the dense reference of
// one decode step over it, for the CPU and GPU tests of paged_kv.hpp.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/serving/paged_kv.hpp"
#include "kernels/testing/random_fill.hpp"

namespace oomlab::ops::testing_serving {

struct PagedCase {
  KvLayout layout;
  std::int64_t heads = 0;         // H (query heads)
  std::int64_t block_tokens = 0;  // slots per block; 0: one block a sequence, its context long
  std::vector<std::int64_t> contexts;  // per sequence
  DType qkv_dtype = DType::bf16;
  std::int64_t layer = 1;         // the layer decoded (the others hold other values)
};

struct PagedCache {
  std::vector<Tensor> blocks;           // one allocation per block
  Tensor table, lens;                   // (N, max_blocks) i64, (N) i32
  std::vector<std::vector<float>> kv;   // per sequence: (context, H + 2Hkv, D) of the decoded layer, as appended
  std::int64_t max_context = 0;
};

inline Tensor i64_tensor(Device& device, const std::vector<std::int64_t>& values, Shape shape) {
  Tensor t = Tensor::empty(device, std::move(shape), DType::i64);
  t.copy_from_host(values.data(), values.size() * sizeof(std::int64_t));
  return t;
}

inline Tensor i32_tensor(Device& device, const std::vector<std::int32_t>& values) {
  Tensor t = Tensor::empty(device, {static_cast<std::int64_t>(values.size())}, DType::i32);
  t.copy_from_host(values.data(), values.size() * sizeof(std::int32_t));
  return t;
}

// Appends every token of every sequence, a layer at a time, a sequence's tokens in one call.
inline PagedCache fill_cache(Device& device, const PagedCase& c, std::uint32_t seed) {
  PagedCache cache;
  const std::int64_t n = static_cast<std::int64_t>(c.contexts.size()), width = c.heads + 2 * c.layout.kv_heads;
  std::int64_t max_blocks = 1;
  for (std::int64_t context : c.contexts) {
    if (c.block_tokens > 0) max_blocks = std::max(max_blocks, (context + c.block_tokens - 1) / c.block_tokens);
    cache.max_context = std::max(cache.max_context, context);
  }
  std::vector<std::int64_t> table(static_cast<std::size_t>(n * max_blocks), 0);
  std::vector<std::int32_t> lens;
  for (std::int64_t s = 0; s < n; ++s) {
    const std::int64_t context = c.contexts[static_cast<std::size_t>(s)];
    const std::int64_t block_tokens = c.block_tokens > 0 ? c.block_tokens : context;
    const std::size_t block_bytes = c.layout.slot_bytes() * static_cast<std::size_t>(block_tokens);
    lens.push_back(static_cast<std::int32_t>(context));
    std::vector<std::int64_t> slots;
    for (std::int64_t b = 0; b < (context + block_tokens - 1) / block_tokens; ++b) {
      cache.blocks.push_back(Tensor::empty(device, {static_cast<std::int64_t>(block_bytes)}, DType::i8));
      table[static_cast<std::size_t>(s * max_blocks + b)] = reinterpret_cast<std::int64_t>(cache.blocks.back().data());
    }
    for (std::int64_t t = 0; t < context; ++t) {
      slots.push_back(table[static_cast<std::size_t>(s * max_blocks + t / block_tokens)] +
                      static_cast<std::int64_t>(c.layout.vector_offset(0, t % block_tokens, block_tokens)));
    }
    Tensor addresses = i64_tensor(device, slots, {context});
    for (std::int64_t layer = 0; layer < c.layout.layers; ++layer) {
      Tensor qkv = oomlab::testing::random_tensor(device, {context, width, c.layout.head_dim}, c.qkv_dtype,
                                                  seed + static_cast<std::uint32_t>(s * 131 + layer * 7), -2.0f, 2.0f);
      kv_append(c.layout, layer, addresses, block_tokens, qkv);
      if (layer == c.layer) cache.kv.push_back(qkv.to_host_f32());
    }
  }
  cache.table = i64_tensor(device, table, {n, max_blocks});
  cache.lens = i32_tensor(device, lens);
  return cache;
}

// out (N, H, D) in f32: softmax(q K^T / sqrt(D)) V over each sequence's appended values, query
// head h reading KV head h / (H / Hkv).
inline std::vector<float> dense_decode(const PagedCase& c, const PagedCache& cache, const std::vector<float>& query) {
  const std::int64_t hkv = c.layout.kv_heads, dim = c.layout.head_dim, width = c.heads + 2 * hkv;
  const std::int64_t group = c.heads / hkv;
  std::vector<float> out;
  for (std::size_t s = 0; s < c.contexts.size(); ++s) {
    const std::vector<float>& kv = cache.kv[s];
    const std::int64_t context = c.contexts[s];
    for (std::int64_t h = 0; h < c.heads; ++h) {
      const float* q = query.data() + (static_cast<std::int64_t>(s) * width + h) * dim;
      std::vector<double> scores(static_cast<std::size_t>(context));
      double max_score = -std::numeric_limits<double>::infinity();
      for (std::int64_t t = 0; t < context; ++t) {
        const float* k = kv.data() + (t * width + c.heads + h / group) * dim;
        double dot = 0;
        for (std::int64_t d = 0; d < dim; ++d) dot += double(q[d]) * k[d];
        scores[static_cast<std::size_t>(t)] = dot / std::sqrt(double(dim));
        max_score = std::max(max_score, scores[static_cast<std::size_t>(t)]);
      }
      double sum = 0;
      std::vector<double> acc(static_cast<std::size_t>(dim), 0.0);
      for (std::int64_t t = 0; t < context; ++t) {
        const double p = std::exp(scores[static_cast<std::size_t>(t)] - max_score);
        sum += p;
        const float* v = kv.data() + (t * width + c.heads + hkv + h / group) * dim;
        for (std::int64_t d = 0; d < dim; ++d) acc[static_cast<std::size_t>(d)] += p * v[d];
      }
      for (double a : acc) out.push_back(static_cast<float>(a / sum));
    }
  }
  return out;
}

}  // namespace oomlab::ops::testing_serving
