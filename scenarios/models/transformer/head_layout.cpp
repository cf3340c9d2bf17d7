// Head layout permutes: argument checks, CPU reference and dispatch.
#include "scenarios/models/transformer/head_layout.hpp"

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"

namespace oomlab::model {
namespace {

struct HeadGeometry {
  std::int64_t batch, seq, heads, head_dim;
};

HeadGeometry check_layout(const char* op, const std::vector<const Tensor*>& heads,
                          const Tensor& tokens) {
  OOMLAB_CHECK(!heads.empty() && heads.size() <= 3, op << ": needs 1 to 3 head tensors");
  const Tensor& first = *heads[0];
  ops::check_dtype(op, "heads", first, ops::kFloatDtypes);
  ops::check_dtype(op, "tokens", tokens, ops::kFloatDtypes);
  OOMLAB_CHECK(first.ndim() == 4, op << ": heads " << first.describe() << " must be (B, H, T, D)");
  const HeadGeometry g{first.dim(0), first.dim(2), first.dim(1), first.dim(3)};
  for (const Tensor* t : heads) {
    ops::check_shape(op, "heads", *t, first.shape());
    ops::check_same_dtype(op, *t, first);
    ops::check_same_device(op, {t, &tokens});
  }
  const auto count = static_cast<std::int64_t>(heads.size());
  ops::check_shape(op, "tokens", tokens, {g.batch, g.seq, count * g.heads * g.head_dim});
  return g;
}

// Calls fn(token_index, head_tensor, head_index) for every element.
template <class Fn>
void for_each_element(const HeadGeometry& g, std::int64_t count, Fn&& fn) {
  const std::int64_t C = g.heads * g.head_dim;
  for (std::int64_t b = 0; b < g.batch; ++b)
    for (std::int64_t t = 0; t < g.seq; ++t)
      for (std::int64_t s = 0; s < count; ++s)
        for (std::int64_t h = 0; h < g.heads; ++h)
          for (std::int64_t d = 0; d < g.head_dim; ++d) {
            const std::int64_t token_index = ((b * g.seq + t) * count + s) * C + h * g.head_dim + d;
            const std::int64_t head_index = ((b * g.heads + h) * g.seq + t) * g.head_dim + d;
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
                                 tokens.dtype(), g.batch, g.seq, g.heads, g.head_dim, to_heads,
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
