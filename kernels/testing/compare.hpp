// Comparing a result with its reference: |got - ref| <= atol + rtol * |ref| per element, with
// per-dtype tolerances. A failure names the first mismatches and the largest error.
#pragma once
#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/core/dtype.hpp"

namespace oomlab::testing {

struct Tolerance {
  double atol;
  double rtol;
};

// Defaults for one rounding of the output; ops that accumulate in lower precision pass their own.
inline Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::f32: return {1e-5, 1e-5};
    case DType::bf16: return {1e-2, 1.6e-2};
    case DType::f16: return {1e-3, 2e-3};
    default: return {0, 0};
  }
}

inline ::testing::AssertionResult all_close(const std::vector<float>& got,
                                            const std::vector<float>& ref, Tolerance tol,
                                            const std::string& what = "result") {
  if (got.size() != ref.size()) {
    return ::testing::AssertionFailure()
           << what << ": size " << got.size() << " != reference size " << ref.size();
  }
  std::size_t mismatches = 0;
  double max_error = 0;
  std::size_t max_index = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    double error = std::fabs(double(got[i]) - double(ref[i]));
    bool bad = !(error <= tol.atol + tol.rtol * std::fabs(double(ref[i])));  // NaN is bad
    if (std::isnan(got[i]) && std::isnan(ref[i])) bad = false;
    if (bad) {
      if (mismatches < 5) first << "  [" << i << "] got " << got[i] << " want " << ref[i] << "\n";
      ++mismatches;
    }
    if (!(error <= max_error)) {
      max_error = error;
      max_index = i;
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << mismatches << " of " << got.size() << " elements outside atol "
         << tol.atol << " + rtol " << tol.rtol << "; max error " << max_error << " at ["
         << max_index << "]\n" << first.str();
}

}  // namespace oomlab::testing
