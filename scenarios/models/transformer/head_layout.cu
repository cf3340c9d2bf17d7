// Head layout permutes: one thread per element, reading and writing with a dtype conversion.
#include "kernels/core/cuda_types.cuh"
#include "kernels/core/launch.cuh"
#include "scenarios/models/transformer/head_layout.hpp"

namespace oomlab::model {
namespace {

struct HeadPointers {
  void* p[3];
};

template <class HeadT, class TokenT>
__global__ void permute_heads_kernel(HeadPointers heads, int count, TokenT* tokens,
                                     std::int64_t batch, std::int64_t seq, std::int64_t num_heads,
                                     std::int64_t head_dim, bool to_heads) {
  const std::int64_t C = num_heads * head_dim;
  const std::int64_t total = batch * seq * count * C;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    // token-major index i = ((b*T + t)*S + s)*C + h*D + d
    const std::int64_t c = i % C;
    const std::int64_t s = (i / C) % count;
    const std::int64_t bt = i / (C * count);
    const std::int64_t t = bt % seq, b = bt / seq;
    const std::int64_t h = c / head_dim, d = c % head_dim;
    const std::int64_t head_index = ((b * num_heads + h) * seq + t) * head_dim + d;
    HeadT* head = static_cast<HeadT*>(heads.p[s]);
    if (to_heads) {
      head[head_index] = from_f32<HeadT>(to_f32(tokens[i]));
    } else {
      tokens[i] = from_f32<TokenT>(to_f32(head[head_index]));
    }
  }
}

}  // namespace

namespace cuda {

void permute_heads(void* const* heads, DType heads_dtype, int count, void* tokens,
                   DType tokens_dtype, std::int64_t batch, std::int64_t seq,
                   std::int64_t num_heads, std::int64_t head_dim, bool to_heads,
                   memory::StreamHandle stream) {
  HeadPointers pointers{{heads[0], heads[1], heads[2]}};
  const std::size_t total = static_cast<std::size_t>(batch * seq * count * num_heads * head_dim);
  if (total == 0) return;
  constexpr unsigned kThreads = 256;
  const unsigned blocks = ceil_div(total, kThreads) < 65535u * 16 ? ceil_div(total, kThreads) : 65535u * 16;
  dispatch_float(heads_dtype, "permute_heads", [&](auto head_zero) {
    using HeadT = decltype(head_zero);
    dispatch_float(tokens_dtype, "permute_heads", [&](auto token_zero) {
      using TokenT = decltype(token_zero);
      permute_heads_kernel<HeadT, TokenT><<<blocks, kThreads, 0, as_cuda_stream(stream)>>>(
          pointers, count, static_cast<TokenT*>(tokens), batch, seq, num_heads, head_dim, to_heads);
      OOMLAB_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace cuda
}  // namespace oomlab::model
