// Rotary position embedding angles, shared by the CPU reference and the CUDA kernel. Computed in
// f32 as Hugging Face's LlamaRotaryEmbedding does: inv_freq = 1 / base^(2i/D), angle = t * inv_freq.
#pragma once
#include <cmath>

#include "kernels/core/host_device.hpp"

namespace oomlab::ops {

constexpr float kRopeBase = 10000.0f;  // LLaMA 1 and 2

OOMLAB_HOST_DEVICE inline float rope_angle(long long position, int pair, int head_dim, float base) {
  const float inv_freq = 1.0f / powf(base, static_cast<float>(2 * pair) / static_cast<float>(head_dim));
  return static_cast<float>(position) * inv_freq;
}

// One pair (x[i], x[i + D/2]) rotated by +angle (forward) or -angle (backward: the transpose).
OOMLAB_HOST_DEVICE inline void rope_rotate_pair(float& first, float& second, float angle, bool inverse) {
  const float c = cosf(angle), s = inverse ? -sinf(angle) : sinf(angle);
  const float a = first, b = second;
  first = a * c - b * s;
  second = b * c + a * s;
}

}  // namespace oomlab::ops
