// The CPU references on plain arrays: the naive backward against central finite differences of
// the naive forward, causality, and the fused (online-softmax) reference against the naive one.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/attention/attention_reference.hpp"
#include "kernels/testing/compare.hpp"
#include "kernels/testing/random_fill.hpp"

namespace oomlab::ops::reference {
namespace {

template <class Real>
std::vector<Real> random_values(std::size_t count, std::uint32_t seed) {
  const auto values = testing::random_values(count, seed, -2.0f, 2.0f);
  return std::vector<Real>(values.begin(), values.end());
}

std::vector<float> as_float(const std::vector<double>& values) {
  return std::vector<float>(values.begin(), values.end());
}

struct Problem {
  AttentionDims dims;
  std::size_t elements() const { return std::size_t(dims.heads * dims.seq * dims.head_dim); }
  std::size_t kv_elements() const { return elements() / std::size_t(dims.group); }
  std::size_t prob_elements() const { return std::size_t(dims.heads * dims.seq * dims.seq); }
};

class NaiveGradient : public ::testing::TestWithParam<AttentionDims> {};

// loss = sum(out * upstream); each gradient entry against (loss(x+h) - loss(x-h)) / 2h in double.
TEST_P(NaiveGradient, MatchesCentralFiniteDifferences) {
  const Problem p{GetParam()};
  auto q = random_values<double>(p.elements(), 1), k = random_values<double>(p.kv_elements(), 2);
  auto v = random_values<double>(p.kv_elements(), 3), upstream = random_values<double>(p.elements(), 4);
  std::vector<double> probs(p.prob_elements()), out(p.elements());
  auto loss = [&]() {
    naive_attention_forward(p.dims, q.data(), k.data(), v.data(), probs.data(), out.data());
    double sum = 0;
    for (std::size_t i = 0; i < out.size(); ++i) sum += out[i] * upstream[i];
    return sum;
  };
  loss();
  std::vector<double> dq(p.elements()), dk(p.kv_elements()), dv(p.kv_elements());
  naive_attention_backward(p.dims, q.data(), k.data(), v.data(), probs.data(), upstream.data(),
                           dq.data(), dk.data(), dv.data());

  const double h = 1e-6;
  for (auto [input, grad, name] : {std::tuple{&q, &dq, "dq"}, std::tuple{&k, &dk, "dk"},
                                   std::tuple{&v, &dv, "dv"}}) {
    std::vector<double> numeric(input->size());
    for (std::size_t i = 0; i < input->size(); ++i) {
      const double saved = (*input)[i];
      (*input)[i] = saved + h;
      const double plus = loss();
      (*input)[i] = saved - h;
      const double minus = loss();
      (*input)[i] = saved;
      numeric[i] = (plus - minus) / (2 * h);
    }
    EXPECT_TRUE(testing::all_close(as_float(*grad), as_float(numeric), {1e-6, 1e-5}, name));
  }
}

INSTANTIATE_TEST_SUITE_P(SmallShapes, NaiveGradient,
                         ::testing::Values(AttentionDims{1, 5, 4}, AttentionDims{2, 3, 2},
                                           AttentionDims{2, 7, 5}, AttentionDims{1, 1, 3},
                                           // grouped-query: dk, dv sum over the group
                                           AttentionDims{4, 5, 4, 2}, AttentionDims{4, 6, 3, 4},
                                           AttentionDims{6, 4, 2, 3}));

// Changing q, k or v at position s changes no output row before s (bit for bit).
TEST(NaiveAttentionReference, OutputAtPositionDependsOnlyOnEarlierPositions) {
  const Problem p{{2, 6, 4}};
  const auto q = random_values<double>(p.elements(), 11), k = random_values<double>(p.elements(), 12);
  const auto v = random_values<double>(p.elements(), 13);
  std::vector<double> probs(p.prob_elements()), base(p.elements());
  naive_attention_forward(p.dims, q.data(), k.data(), v.data(), probs.data(), base.data());
  const std::int64_t T = p.dims.seq, D = p.dims.head_dim;
  for (int which = 0; which < 3; ++which) {
    for (std::int64_t s = 0; s < T; ++s) {
      auto q2 = q, k2 = k, v2 = v;
      auto& changed = which == 0 ? q2 : which == 1 ? k2 : v2;
      for (std::int64_t h = 0; h < p.dims.heads; ++h) {
        for (std::int64_t d = 0; d < D; ++d) changed[(h * T + s) * D + d] += 0.5 + d;
      }
      std::vector<double> out(p.elements());
      naive_attention_forward(p.dims, q2.data(), k2.data(), v2.data(), probs.data(), out.data());
      for (std::int64_t h = 0; h < p.dims.heads; ++h) {
        for (std::int64_t t = 0; t < T; ++t) {
          bool row_same = true;
          for (std::int64_t d = 0; d < D; ++d) {
            row_same = row_same && out[(h * T + t) * D + d] == base[(h * T + t) * D + d];
          }
          if (t < s) {
            EXPECT_TRUE(row_same) << "input " << "qkv"[which] << " at " << s << " changed row " << t;
          } else if (t == s && (s > 0 || which == 2)) {  // row 0 is v_0 whatever q_0, k_0 are
            EXPECT_FALSE(row_same) << "input " << "qkv"[which] << " at " << s << " left its own row";
          }
        }
      }
      // Probabilities above the diagonal are exactly zero.
      for (std::int64_t i = 0; i < T; ++i) {
        for (std::int64_t j = i + 1; j < T; ++j) EXPECT_EQ(probs[i * T + j], 0.0);
      }
    }
  }
}

class FusedEqualsNaive : public ::testing::TestWithParam<std::tuple<AttentionDims, std::int64_t>> {};

TEST_P(FusedEqualsNaive, ForwardAndBackward) {
  const auto [dims, key_tile] = GetParam();
  const Problem p{dims};
  const auto q = random_values<float>(p.elements(), 21), k = random_values<float>(p.kv_elements(), 22);
  const auto v = random_values<float>(p.kv_elements(), 23), d_out = random_values<float>(p.elements(), 24);
  std::vector<float> probs(p.prob_elements()), naive_out(p.elements()), fused_out(p.elements());
  std::vector<float> lse(std::size_t(dims.heads * dims.seq));
  naive_attention_forward(dims, q.data(), k.data(), v.data(), probs.data(), naive_out.data());
  fused_attention_forward(dims, q.data(), k.data(), v.data(), fused_out.data(), lse.data(), key_tile);
  EXPECT_TRUE(testing::all_close(fused_out, naive_out, {1e-5, 1e-5}, "out"));

  // lse against the definition: log of the causal row sum of exp(scale * q.k)
  std::vector<float> lse_direct(lse.size());
  const std::int64_t T = dims.seq, D = dims.head_dim;
  for (std::int64_t h = 0; h < dims.heads; ++h) {
    for (std::int64_t i = 0; i < T; ++i) {
      double sum = 0;
      for (std::int64_t j = 0; j <= i; ++j) {
        double s = 0;
        const std::int64_t kv = h / dims.group;
        for (std::int64_t d = 0; d < D; ++d) s += double(q[(h * T + i) * D + d]) * k[(kv * T + j) * D + d];
        sum += std::exp(s / std::sqrt(double(D)));
      }
      lse_direct[h * T + i] = float(std::log(sum));
    }
  }
  EXPECT_TRUE(testing::all_close(lse, lse_direct, {1e-5, 1e-5}, "lse"));

  std::vector<float> ndq(p.elements()), ndk(p.kv_elements()), ndv(p.kv_elements());
  std::vector<float> fdq(p.elements()), fdk(p.kv_elements()), fdv(p.kv_elements());
  naive_attention_backward(dims, q.data(), k.data(), v.data(), probs.data(), d_out.data(), ndq.data(),
                           ndk.data(), ndv.data());
  fused_attention_backward(dims, q.data(), k.data(), v.data(), fused_out.data(), lse.data(),
                           d_out.data(), fdq.data(), fdk.data(), fdv.data());
  EXPECT_TRUE(testing::all_close(fdq, ndq, {1e-4, 1e-4}, "dq"));
  EXPECT_TRUE(testing::all_close(fdk, ndk, {1e-4, 1e-4}, "dk"));
  EXPECT_TRUE(testing::all_close(fdv, ndv, {1e-4, 1e-4}, "dv"));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FusedEqualsNaive,
    ::testing::Values(std::tuple{AttentionDims{1, 5, 4}, std::int64_t{1}},
                      std::tuple{AttentionDims{2, 13, 8}, std::int64_t{3}},
                      std::tuple{AttentionDims{3, 40, 16}, std::int64_t{16}},
                      std::tuple{AttentionDims{1, 33, 64}, std::int64_t{64}},
                      std::tuple{AttentionDims{4, 21, 8, 2}, std::int64_t{5}},
                      std::tuple{AttentionDims{8, 17, 16, 8}, std::int64_t{16}}));

// Grouped-query attention against its definition: repeat each K/V head over its group
// (Hugging Face's repeat_kv), run plain multi-head attention, sum dK and dV over each group.
// The outputs and dQ do the same arithmetic on the same numbers: bit for bit. dK and dV are summed
// in double before one rounding here, per head then summed there: to f32 rounding.
class GroupedEqualsRepeatedKv : public ::testing::TestWithParam<AttentionDims> {};

TEST_P(GroupedEqualsRepeatedKv, NaiveAndFused) {
  const AttentionDims dims = GetParam();
  const Problem p{dims}, mha{{dims.heads, dims.seq, dims.head_dim}};
  const std::int64_t T = dims.seq, D = dims.head_dim, head_elements = T * D;
  const auto q = random_values<float>(p.elements(), 31), k = random_values<float>(p.kv_elements(), 32);
  const auto v = random_values<float>(p.kv_elements(), 33), d_out = random_values<float>(p.elements(), 34);
  auto repeated = [&](const std::vector<float>& kv_values) {
    std::vector<float> out(p.elements());
    for (std::int64_t h = 0; h < dims.heads; ++h) {
      std::copy_n(kv_values.begin() + (h / dims.group) * head_elements, head_elements,
                  out.begin() + h * head_elements);
    }
    return out;
  };
  auto summed_over_group = [&](const std::vector<float>& per_head) {
    std::vector<double> sums(p.kv_elements(), 0.0);
    for (std::int64_t h = 0; h < dims.heads; ++h) {
      for (std::int64_t e = 0; e < head_elements; ++e) {
        sums[(h / dims.group) * head_elements + e] += per_head[h * head_elements + e];
      }
    }
    return std::vector<float>(sums.begin(), sums.end());
  };
  const auto k_rep = repeated(k), v_rep = repeated(v);
  const testing::Tolerance exact{0, 0}, one_rounding{1e-6, 1e-5};

  std::vector<float> probs(p.prob_elements()), out(p.elements()), ref_probs(probs.size()), ref_out(out.size());
  naive_attention_forward(dims, q.data(), k.data(), v.data(), probs.data(), out.data());
  naive_attention_forward(mha.dims, q.data(), k_rep.data(), v_rep.data(), ref_probs.data(), ref_out.data());
  EXPECT_TRUE(testing::all_close(probs, ref_probs, exact, "naive probs"));
  EXPECT_TRUE(testing::all_close(out, ref_out, exact, "naive out"));
  std::vector<float> dq(p.elements()), dk(p.kv_elements()), dv(p.kv_elements());
  std::vector<float> rdq(p.elements()), rdk(p.elements()), rdv(p.elements());
  naive_attention_backward(dims, q.data(), k.data(), v.data(), probs.data(), d_out.data(), dq.data(),
                           dk.data(), dv.data());
  naive_attention_backward(mha.dims, q.data(), k_rep.data(), v_rep.data(), ref_probs.data(), d_out.data(),
                           rdq.data(), rdk.data(), rdv.data());
  EXPECT_TRUE(testing::all_close(dq, rdq, exact, "naive dq"));
  EXPECT_TRUE(testing::all_close(dk, summed_over_group(rdk), one_rounding, "naive dk"));
  EXPECT_TRUE(testing::all_close(dv, summed_over_group(rdv), one_rounding, "naive dv"));

  std::vector<float> lse(std::size_t(dims.heads * T)), ref_lse(lse.size());
  fused_attention_forward(dims, q.data(), k.data(), v.data(), out.data(), lse.data());
  fused_attention_forward(mha.dims, q.data(), k_rep.data(), v_rep.data(), ref_out.data(), ref_lse.data());
  EXPECT_TRUE(testing::all_close(out, ref_out, exact, "fused out"));
  EXPECT_TRUE(testing::all_close(lse, ref_lse, exact, "fused lse"));
  fused_attention_backward(dims, q.data(), k.data(), v.data(), out.data(), lse.data(), d_out.data(),
                           dq.data(), dk.data(), dv.data());
  fused_attention_backward(mha.dims, q.data(), k_rep.data(), v_rep.data(), ref_out.data(), ref_lse.data(),
                           d_out.data(), rdq.data(), rdk.data(), rdv.data());
  EXPECT_TRUE(testing::all_close(dq, rdq, exact, "fused dq"));
  EXPECT_TRUE(testing::all_close(dk, summed_over_group(rdk), one_rounding, "fused dk"));
  EXPECT_TRUE(testing::all_close(dv, summed_over_group(rdv), one_rounding, "fused dv"));
}

// (B*H, T, D, H / Hkv): one K/V head for all (multi-query), groups of 2 and 4, and B = 2 with
// H = 4, Hkv = 2 so a group never straddles two batch entries.
INSTANTIATE_TEST_SUITE_P(Shapes, GroupedEqualsRepeatedKv,
                         ::testing::Values(AttentionDims{4, 9, 8, 4}, AttentionDims{4, 13, 16, 2},
                                           AttentionDims{8, 11, 8, 2}, AttentionDims{8, 7, 4, 4},
                                           AttentionDims{3, 6, 4, 1}));

}  // namespace
}  // namespace oomlab::ops::reference
