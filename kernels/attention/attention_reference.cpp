// CPU references for causal attention (see attention_reference.hpp). Loops are per head and
// plain; the point is to be obviously right, not fast.
#include "kernels/attention/attention_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace oomlab::ops::reference {
namespace {

double dot(const double* a, const double* b, std::int64_t n) {
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// One head's (rows, cols) block widened to double, so every sum below accumulates in double.
template <class Real>
std::vector<double> widen(const Real* data, std::int64_t count) {
  return std::vector<double>(data, data + count);
}

}  // namespace

template <class Real>
void naive_attention_forward(AttentionDims dims, const Real* q, const Real* k, const Real* v,
                             Real* probs, Real* out) {
  const std::int64_t T = dims.seq, D = dims.head_dim;
  const double scale = 1.0 / std::sqrt(double(D));
  for (std::int64_t h = 0; h < dims.heads; ++h) {
    const std::int64_t kv = h / dims.group;
    auto qh = widen(q + h * T * D, T * D), kh = widen(k + kv * T * D, T * D);
    auto vh = widen(v + kv * T * D, T * D);
    Real* ph = probs + h * T * T;
    Real* oh = out + h * T * D;
    std::vector<double> row(T);
    for (std::int64_t i = 0; i < T; ++i) {
      double row_max = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j <= i; ++j) {
        row[j] = scale * dot(&qh[i * D], &kh[j * D], D);
        row_max = std::max(row_max, row[j]);
      }
      double sum = 0;
      for (std::int64_t j = 0; j <= i; ++j) sum += (row[j] = std::exp(row[j] - row_max));
      for (std::int64_t j = 0; j < T; ++j) ph[i * T + j] = Real(j <= i ? row[j] / sum : 0.0);
      for (std::int64_t d = 0; d < D; ++d) {
        double acc = 0;
        for (std::int64_t j = 0; j <= i; ++j) acc += (row[j] / sum) * vh[j * D + d];
        oh[i * D + d] = Real(acc);
      }
    }
  }
}

template <class Real>
void naive_attention_backward(AttentionDims dims, const Real* q, const Real* k, const Real* v,
                              const Real* probs, const Real* d_out, Real* dq, Real* dk, Real* dv) {
  const std::int64_t T = dims.seq, D = dims.head_dim;
  const double scale = 1.0 / std::sqrt(double(D));
  for (std::int64_t kv = 0; kv < dims.heads / dims.group; ++kv) {
    auto kh = widen(k + kv * T * D, T * D), vh = widen(v + kv * T * D, T * D);
    std::vector<double> dkh(T * D, 0.0), dvh(T * D, 0.0), ds(T);  // summed over the group
    for (std::int64_t h = kv * dims.group; h < (kv + 1) * dims.group; ++h) {
      auto qh = widen(q + h * T * D, T * D), doh = widen(d_out + h * T * D, T * D);
      auto ph = widen(probs + h * T * T, T * T);
      std::vector<double> dqh(T * D, 0.0);
      for (std::int64_t i = 0; i < T; ++i) {
        double row_dot = 0;  // rowsum(dP * P)
        for (std::int64_t j = 0; j <= i; ++j) {
          ds[j] = dot(&doh[i * D], &vh[j * D], D);  // dP_ij
          row_dot += ds[j] * ph[i * T + j];
        }
        for (std::int64_t j = 0; j <= i; ++j) {
          const double p = ph[i * T + j];
          const double dsij = p * (ds[j] - row_dot) * scale;
          for (std::int64_t d = 0; d < D; ++d) {
            dqh[i * D + d] += dsij * kh[j * D + d];
            dkh[j * D + d] += dsij * qh[i * D + d];
            dvh[j * D + d] += p * doh[i * D + d];
          }
        }
      }
      std::copy(dqh.begin(), dqh.end(), dq + h * T * D);
    }
    std::copy(dkh.begin(), dkh.end(), dk + kv * T * D);
    std::copy(dvh.begin(), dvh.end(), dv + kv * T * D);
  }
}

template <class Real>
void fused_attention_forward(AttentionDims dims, const Real* q, const Real* k, const Real* v,
                             Real* out, float* lse, std::int64_t key_tile) {
  const std::int64_t T = dims.seq, D = dims.head_dim;
  const double scale = 1.0 / std::sqrt(double(D));
  const double neg_inf = -std::numeric_limits<double>::infinity();
  key_tile = std::max<std::int64_t>(key_tile, 1);
  for (std::int64_t h = 0; h < dims.heads; ++h) {
    const std::int64_t kv = h / dims.group;
    auto qh = widen(q + h * T * D, T * D), kh = widen(k + kv * T * D, T * D);
    auto vh = widen(v + kv * T * D, T * D);
    for (std::int64_t i = 0; i < T; ++i) {
      // The running (max, sum, unnormalised output) of the kernel, updated one key tile at a time.
      double running_max = neg_inf, running_sum = 0;
      std::vector<double> acc(D, 0.0);
      for (std::int64_t j0 = 0; j0 <= i; j0 += key_tile) {
        const std::int64_t j1 = std::min(j0 + key_tile, i + 1);
        double tile_max = running_max;
        std::vector<double> s(j1 - j0);
        for (std::int64_t j = j0; j < j1; ++j) {
          s[j - j0] = scale * dot(&qh[i * D], &kh[j * D], D);
          tile_max = std::max(tile_max, s[j - j0]);
        }
        const double rescale = std::exp(running_max - tile_max);  // 0 on the first tile
        running_sum *= rescale;
        for (double& a : acc) a *= rescale;
        for (std::int64_t j = j0; j < j1; ++j) {
          const double p = std::exp(s[j - j0] - tile_max);
          running_sum += p;
          for (std::int64_t d = 0; d < D; ++d) acc[d] += p * vh[j * D + d];
        }
        running_max = tile_max;
      }
      for (std::int64_t d = 0; d < D; ++d) out[(h * T + i) * D + d] = Real(acc[d] / running_sum);
      lse[h * T + i] = float(running_max + std::log(running_sum));
    }
  }
}

template <class Real>
void fused_attention_backward(AttentionDims dims, const Real* q, const Real* k, const Real* v,
                              const Real* out, const float* lse, const Real* d_out, Real* dq,
                              Real* dk, Real* dv) {
  const std::int64_t T = dims.seq, D = dims.head_dim;
  const double scale = 1.0 / std::sqrt(double(D));
  for (std::int64_t kv = 0; kv < dims.heads / dims.group; ++kv) {
    auto kh = widen(k + kv * T * D, T * D), vh = widen(v + kv * T * D, T * D);
    std::vector<double> dkh(T * D, 0.0), dvh(T * D, 0.0);  // summed over the group
    for (std::int64_t h = kv * dims.group; h < (kv + 1) * dims.group; ++h) {
      auto qh = widen(q + h * T * D, T * D), oh = widen(out + h * T * D, T * D);
      auto doh = widen(d_out + h * T * D, T * D);
      std::vector<double> delta(T), dqh(T * D, 0.0);
      for (std::int64_t i = 0; i < T; ++i) delta[i] = dot(&doh[i * D], &oh[i * D], D);
      // Kernel order: each key j (a K/V tile row) visits the queries i >= j that can see it.
      for (std::int64_t j = 0; j < T; ++j) {
        for (std::int64_t i = j; i < T; ++i) {
          const double p = std::exp(scale * dot(&qh[i * D], &kh[j * D], D) - lse[h * T + i]);
          const double dp = dot(&doh[i * D], &vh[j * D], D);
          const double ds = p * (dp - delta[i]) * scale;
          for (std::int64_t d = 0; d < D; ++d) {
            dvh[j * D + d] += p * doh[i * D + d];
            dkh[j * D + d] += ds * qh[i * D + d];
            dqh[i * D + d] += ds * kh[j * D + d];
          }
        }
      }
      std::copy(dqh.begin(), dqh.end(), dq + h * T * D);
    }
    std::copy(dkh.begin(), dkh.end(), dk + kv * T * D);
    std::copy(dvh.begin(), dvh.end(), dv + kv * T * D);
  }
}

#define OOMLAB_INSTANTIATE_ATTENTION_REFERENCE(Real)                                              \
  template void naive_attention_forward<Real>(AttentionDims, const Real*, const Real*,            \
                                              const Real*, Real*, Real*);                         \
  template void naive_attention_backward<Real>(AttentionDims, const Real*, const Real*,           \
                                               const Real*, const Real*, const Real*, Real*,      \
                                               Real*, Real*);                                     \
  template void fused_attention_forward<Real>(AttentionDims, const Real*, const Real*,            \
                                              const Real*, Real*, float*, std::int64_t);          \
  template void fused_attention_backward<Real>(AttentionDims, const Real*, const Real*,           \
                                               const Real*, const Real*, const float*,            \
                                               const Real*, Real*, Real*, Real*);
OOMLAB_INSTANTIATE_ATTENTION_REFERENCE(float)
OOMLAB_INSTANTIATE_ATTENTION_REFERENCE(double)
#undef OOMLAB_INSTANTIATE_ATTENTION_REFERENCE

}  // namespace oomlab::ops::reference
