// Division by a run-time divisor that is fixed for a whole kernel (image width, channel count):
// the host precomputes a multiplier so the device replaces an integer division (~20
// instructions) by a multiply-high and a shift. Valid for dividends in [0, 2^31).
#pragma once
#include <cstdint>

namespace oomlab::ops::detail {

struct FastDivmod {
  int divisor = 1;
  unsigned multiplier = 0;
  unsigned shift = 0;

  FastDivmod() = default;
  // Round-up multiplier 2^(31 + ceil(log2 d)) / d (the scheme CUTLASS uses).
  explicit FastDivmod(int d) : divisor(d) {
    if (d == 1) return;
    unsigned log2_ceil = 0;
    while ((1ull << log2_ceil) < static_cast<unsigned long long>(d)) ++log2_ceil;
    const unsigned p = 31 + log2_ceil;
    multiplier = static_cast<unsigned>(((1ull << p) + static_cast<unsigned>(d) - 1) / static_cast<unsigned>(d));
    shift = p - 32;
  }

#ifdef __CUDACC__
  __device__ __forceinline__ void divmod(int dividend, int& quotient, int& remainder) const {
    quotient = divisor == 1 ? dividend
                            : static_cast<int>(__umulhi(static_cast<unsigned>(dividend), multiplier) >> shift);
    remainder = dividend - quotient * divisor;
  }
#endif
};

}  // namespace oomlab::ops::detail
