// Block-wise 8-bit optimizer state, shared by the CPU reference and the CUDA kernel. Each block
// of kAdam8BitBlock moments is stored as one f32 absmax and a byte per moment: the index of the
// nearest entry of a 256-entry "dynamic" map of values in [-1, 1] (m) or [0, 1] (v), times the
// absmax. The map spends its codes by decades, as dynamic tree quantisation does (Dettmers, 8-bit
// optimizers): 7 decades from 1e-7 to 1, each holding twice the levels of the one below, spaced
// evenly within it. So a moment 1e-6 of its block's largest is still represented, where a linear
// byte would round everything below 1/255 of it to zero.
#pragma once
#include <cstdint>

#include "kernels/core/host_device.hpp"

namespace oomlab::ops {

constexpr int kAdam8BitBlock = 2048;  // moments per absmax (bitsandbytes' block size)
constexpr int kDynamicMapSize = 256;
constexpr int kDynamicDecades = 7;

// The k-th decade's magnitudes start at 10^(k - 6) * 0.1.
OOMLAB_HOST_DEVICE inline float dynamic_decade_scale(int k) {
  constexpr float kScales[kDynamicDecades] = {1e-6f, 1e-5f, 1e-4f, 1e-3f, 1e-2f, 1e-1f, 1.0f};
  return kScales[k];
}

// The p-th positive magnitude, ascending: a signed map has 1, 2, ..., 64 levels per decade (127),
// an unsigned one twice as many (254); each level is the middle of its slice of [0.1, 1) x 10^(k-6).
OOMLAB_HOST_DEVICE inline float dynamic_magnitude(bool is_signed, int p) {
  for (int k = 0; k < kDynamicDecades; ++k) {
    const int levels = is_signed ? (1 << k) : (2 << k);
    if (p < levels)
      return dynamic_decade_scale(k) * (0.1f + 0.9f * (static_cast<float>(p) + 0.5f) / static_cast<float>(levels));
    p -= levels;
  }
  return 1.0f;
}

// Entry `index` of the sorted map: signed = 127 negatives, 0, 127 positives, 1; unsigned = 0, 254
// positives, 1. Strictly increasing in index.
OOMLAB_HOST_DEVICE inline float dynamic_map_value(bool is_signed, int index) {
  if (index == kDynamicMapSize - 1) return 1.0f;
  if (!is_signed) return index == 0 ? 0.0f : dynamic_magnitude(false, index - 1);
  if (index == 127) return 0.0f;
  return index > 127 ? dynamic_magnitude(true, index - 128) : -dynamic_magnitude(true, 126 - index);
}

// The code of the map entry nearest to x (x already divided by the absmax: in [-1, 1]).
OOMLAB_HOST_DEVICE inline std::uint8_t dynamic_quantize(const float* map, float x) {
  int lo = 0, hi = kDynamicMapSize - 1;  // map[lo] <= x <= map[hi] after clamping
  if (x <= map[lo]) return 0;
  if (x >= map[hi]) return static_cast<std::uint8_t>(hi);
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (map[mid] <= x) lo = mid;
    else hi = mid;
  }
  return static_cast<std::uint8_t>(x - map[lo] <= map[hi] - x ? lo : hi);
}

}  // namespace oomlab::ops
