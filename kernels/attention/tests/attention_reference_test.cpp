// The CPU references on plain arrays: the naive backward against central finite differences of
// the naive forward, causality, and the fused (online-softmax) reference against the naive one.
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
  std::size_t prob_elements() const { return std::size_t(dims.heads * dims.seq * dims.seq); }
};

class NaiveGradient : public ::testing::TestWithParam<AttentionDims> {};

// loss = sum(out * upstream); each gradient entry against (loss(x+h) - loss(x-h)) / 2h in double.
TEST_P(NaiveGradient, MatchesCentralFiniteDifferences) {
  const Problem p{GetParam()};
  auto q = random_values<double>(p.elements(), 1), k = random_values<double>(p.elements(), 2);
  auto v = random_values<double>(p.elements(), 3), upstream = random_values<double>(p.elements(), 4);
  std::vector<double> probs(p.prob_elements()), out(p.elements());
  auto loss = [&]() {
    naive_attention_forward(p.dims, q.data(), k.data(), v.data(), probs.data(), out.data());
    double sum = 0;
    for (std::size_t i = 0; i < out.size(); ++i) sum += out[i] * upstream[i];
    return sum;
  };
  loss();
  std::vector<double> dq(p.elements()), dk(p.elements()), dv(p.elements());
  naive_attention_backward(p.dims, q.data(), k.data(), v.data(), probs.data(), upstream.data(),
                           dq.data(), dk.data(), dv.data());

  const double h = 1e-6;
  for (auto [input, grad, name] : {std::tuple{&q, &dq, "dq"}, std::tuple{&k, &dk, "dk"},
                                   std::tuple{&v, &dv, "dv"}}) {
    std::vector<double> numeric(p.elements());
    for (std::size_t i = 0; i < p.elements(); ++i) {
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
                                           AttentionDims{2, 7, 5}, AttentionDims{1, 1, 3}));

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
  const auto q = random_values<float>(p.elements(), 21), k = random_values<float>(p.elements(), 22);
  const auto v = random_values<float>(p.elements(), 23), d_out = random_values<float>(p.elements(), 24);
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
        for (std::int64_t d = 0; d < D; ++d) s += double(q[(h * T + i) * D + d]) * k[(h * T + j) * D + d];
        sum += std::exp(s / std::sqrt(double(D)));
      }
      lse_direct[h * T + i] = float(std::log(sum));
    }
  }
  EXPECT_TRUE(testing::all_close(lse, lse_direct, {1e-5, 1e-5}, "lse"));

  std::vector<float> ndq(p.elements()), ndk(p.elements()), ndv(p.elements());
  std::vector<float> fdq(p.elements()), fdk(p.elements()), fdv(p.elements());
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
                      std::tuple{AttentionDims{1, 33, 64}, std::int64_t{64}}));

}  // namespace
}  // namespace oomlab::ops::reference
