// Finite-difference checks of a network's parameter gradients at a few entries per parameter:
// the full finite_difference_gradient() would run two forwards per weight, too many for a whole
// network, so each parameter is probed at seeded random positions.
//
// ReLU kinks: a bias moves every pre-activation of its channel, so a step of h crosses zero
// somewhere often enough that the difference quotient is not the derivative there. An entry is
// therefore only compared when its quotients at h and 2h agree (no kink within 2h); kinked
// entries are skipped and another is drawn, and too few clean entries is a failure of its own.
#pragma once
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/core/tensor.hpp"
#include "kernels/testing/compare.hpp"

namespace oomlab::testing {

// Central difference of `loss` in element `index` of the host f32 tensor `value`.
inline double central_difference(Tensor& value, std::size_t index, const std::function<double()>& loss,
                                 float step) {
  float* data = value.data_as<float>();
  const float saved = data[index];
  const float up = saved + step, down = saved - step;
  data[index] = up;
  const double plus = loss();
  data[index] = down;
  const double minus = loss();
  data[index] = saved;
  return (plus - minus) / (double(up) - double(down));
}

// Compares `analytic` (the backward's gradient of `value`) with central differences at
// `entries` random kink-free positions.
inline ::testing::AssertionResult gradient_matches_at_random_entries(
    Tensor& value, const std::vector<float>& analytic, const std::function<double()>& loss,
    const std::string& what, std::uint32_t seed, int entries = 4, float step = 1e-3f,
    Tolerance tolerance = {5e-3, 2e-2}) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, analytic.size() - 1);
  std::vector<float> got, want;
  for (int attempt = 0; attempt < 8 * entries && static_cast<int>(got.size()) < entries; ++attempt) {
    const std::size_t index = pick(rng);
    const double fine = central_difference(value, index, loss, step);
    const double coarse = central_difference(value, index, loss, 2 * step);
    if (std::fabs(fine - coarse) > tolerance.atol + tolerance.rtol * std::fabs(fine)) continue;  // kink
    got.push_back(analytic[index]);
    want.push_back(static_cast<float>(fine));
  }
  if (static_cast<int>(got.size()) < entries) {
    return ::testing::AssertionFailure() << what << ": only " << got.size() << " of " << entries
                                         << " probed entries were free of kinks";
  }
  return all_close(got, want, tolerance, what);
}

}  // namespace oomlab::testing
