// Head layout permutes: argument checks, CPU reference and dispatch.
#include "scenarios/models/transformer/head_layout.hpp"

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"

namespace oomlab::model {
namespace {

struct HeadGeometry {
  std::int64_t batch, seq, head_dim;
  std::int64_t head_counts[3];  // H_s of each head tensor (0 past the last)
  std::int64_t total_heads;     // their sum: the token row holds total_heads * head_dim values
};

HeadGeometry check_layout(const char* op, const std::vector<const Tensor*>& heads,
                          const Tensor& tokens) {
  OOMLAB_CHECK(!heads.empty() && heads.size() <= 3, op << ": needs 1 to 3 head tensors");
  const Tensor& first = *heads[0];
  ops::check_dtype(op, "heads", first, ops::kFloatDtypes);
  ops::check_dtype(op, "tokens", tokens, ops::kFloatDtypes);
  OOMLAB_CHECK(first.ndim() == 4, op << ": heads " << first.describe() << " must be (B, H, T, D)");
  HeadGeometry g{first.dim(0), first.dim(2), first.dim(3), {0, 0, 0}, 0};
  for (std::size_t s = 0; s < heads.size(); ++s) {
    const Tensor* t = heads[s];
    OOMLAB_CHECK(t->ndim() == 4 && t->dim(0) == g.batch && t->dim(2) == g.seq && t->dim(3) == g.head_dim,
                 op << ": heads " << t->describe() << " must be (" << g.batch << ", H, " << g.seq << ", "
                    << g.head_dim << ") like " << first.describe());
    ops::check_same_dtype(op, *t, first);
    ops::check_same_device(op, {t, &tokens});
    g.head_counts[s] = t->dim(1);
    g.total_heads += t->dim(1);
  }
  ops::check_shape(op, "tokens", tokens, {g.batch, g.seq, g.total_heads * g.head_dim});
  return g;
}

// Calls fn(token_index, head_tensor, head_index) for every element.
template <class Fn>
void for_each_element(const HeadGeometry& g, std::int64_t count, Fn&& fn) {
  const std::int64_t row = g.total_heads * g.head_dim;
  for (std::int64_t b = 0; b < g.batch; ++b)
    for (std::int64_t t = 0; t < g.seq; ++t)
      for (std::int64_t s = 0, start = 0; s < count; start += g.head_counts[s], ++s)
        for (std::int64_t h = 0; h < g.head_counts[s]; ++h)
          for (std::int64_t d = 0; d < g.head_dim; ++d) {
            const std::int64_t token_index = (b * g.seq + t) * row + (start + h) * g.head_dim + d;
            const std::int64_t head_index = ((b * g.head_counts[s] + h) * g.seq + t) * g.head_dim + d;
            fn(static_cast<std::size_t>(token_index), static_cast<std::size_t>(s),
               static_cast<std::size_t>(head_index));
          }
}

void permute(const char* op, const std::vector<const Tensor*>& heads, const Tensor& tokens,
             bool to_heads) {
  const HeadGeometry g = check_layout(op, heads, tokens);
  const auto count = static_cast<std::int64_t>(heads.size());
  switch (tokens.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      for_each_element(g, count, [&](std::size_t ti, std::size_t s, std::size_t hi) {
        const Tensor& head = *heads[s];
        if (to_heads) {
          store_value(head.data(), head.dtype(), hi, load_as_float(tokens.data(), tokens.dtype(), ti));
        } else {
          store_value(tokens.data(), tokens.dtype(), ti, load_as_float(head.data(), head.dtype(), hi));
        }
      });
      return;
    case DeviceKind::cuda: {
#if OOMLAB_WITH_CUDA
      void* pointers[3] = {nullptr, nullptr, nullptr};
      for (std::size_t s = 0; s < heads.size(); ++s) pointers[s] = heads[s]->data();
      return cuda::permute_heads(pointers, heads[0]->dtype(), static_cast<int>(count), tokens.data(),
                                 tokens.dtype(), g.batch, g.seq, g.head_counts, g.head_dim, to_heads,
                                 tokens.device().stream());
#endif
      ops::throw_no_cuda(op);
    }
  }
}

}  // namespace

void heads_from_tokens(const std::vector<Tensor*>& heads, const Tensor& tokens) {
  std::vector<const Tensor*> views(heads.begin(), heads.end());
  permute("heads_from_tokens", views, tokens, true);
}

void tokens_from_heads(Tensor& tokens, const std::vector<const Tensor*>& heads) {
  permute("tokens_from_heads", heads, tokens, false);
}

}  // namespace oomlab::model
