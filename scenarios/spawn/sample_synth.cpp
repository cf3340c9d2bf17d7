#include "scenarios/spawn/sample_synth.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace oomlab::scenarios {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

float uniform(std::uint64_t& state) {  // [0, 1)
  return static_cast<float>(splitmix64(state) >> 40) / static_cast<float>(1ULL << 24);
}

constexpr int kNoiseGrid = 9;  // value-noise lattice points per side
constexpr int kWaves = 3;      // sinusoids per channel
constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};  // ImageNet's, as every loader uses
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};

}  // namespace

void synthesize_sample(const ImageSpec& spec, std::uint64_t seed, std::int64_t sample_id,
                       float* out) {
  if (spec.source_size <= 0 || spec.crop_size <= 0 || spec.channels <= 0 ||
      spec.crop_size > spec.source_size) {
    throw std::invalid_argument("synthesize_sample: need 0 < crop_size <= source_size, channels > 0");
  }
  std::uint64_t state = seed ^ (static_cast<std::uint64_t>(sample_id) * 0xd1342543de82ef95ULL);
  const int S = spec.source_size, C = spec.channels;

  // "Decode": the texture at source resolution, quantised to u8.
  struct Wave { float fx, fy, phase, amplitude; };
  std::vector<Wave> waves(static_cast<std::size_t>(C) * kWaves);
  for (Wave& w : waves) {
    const float angle = 6.2831853f * uniform(state);
    const float frequency = 0.05f + 0.4f * uniform(state);
    w = {frequency * std::cos(angle), frequency * std::sin(angle), 6.2831853f * uniform(state),
         0.15f + 0.2f * uniform(state)};
  }
  std::vector<float> lattice(static_cast<std::size_t>(kNoiseGrid) * kNoiseGrid * C);
  for (float& v : lattice) v = uniform(state);
  std::vector<std::uint8_t> decoded(static_cast<std::size_t>(S) * S * C);
  const float cell = static_cast<float>(S - 1) / (kNoiseGrid - 1);
  for (int y = 0; y < S; ++y) {
    const float gy = y / cell;
    const int y0 = std::min(static_cast<int>(gy), kNoiseGrid - 2);
    const float ty = gy - y0;
    for (int x = 0; x < S; ++x) {
      const float gx = x / cell;
      const int x0 = std::min(static_cast<int>(gx), kNoiseGrid - 2);
      const float tx = gx - x0;
      for (int c = 0; c < C; ++c) {
        auto at = [&](int yy, int xx) { return lattice[(static_cast<std::size_t>(yy) * kNoiseGrid + xx) * C + c]; };
        float value = (1 - ty) * ((1 - tx) * at(y0, x0) + tx * at(y0, x0 + 1)) +
                      ty * ((1 - tx) * at(y0 + 1, x0) + tx * at(y0 + 1, x0 + 1));
        value *= 0.5f;
        for (int k = 0; k < kWaves; ++k) {
          const Wave& w = waves[static_cast<std::size_t>(c) * kWaves + k];
          value += w.amplitude * (0.5f + 0.5f * std::sin(w.fx * x + w.fy * y + w.phase));
        }
        value = std::fmin(std::fmax(value, 0.0f), 1.0f);
        decoded[(static_cast<std::size_t>(y) * S + x) * C + c] =
            static_cast<std::uint8_t>(std::lround(value * 255.0f));
      }
    }
  }

  // Augment: a random crop, a random horizontal flip, then normalise.
  const int K = spec.crop_size;
  const int range = S - K + 1;
  const int top = static_cast<int>(splitmix64(state) % static_cast<std::uint64_t>(range));
  const int left = static_cast<int>(splitmix64(state) % static_cast<std::uint64_t>(range));
  const bool flip = (splitmix64(state) & 1) != 0;
  for (int y = 0; y < K; ++y) {
    for (int x = 0; x < K; ++x) {
      const int sx = left + (flip ? K - 1 - x : x);
      const std::uint8_t* pixel = &decoded[(static_cast<std::size_t>(top + y) * S + sx) * C];
      float* dst = out + (static_cast<std::size_t>(y) * K + x) * C;
      for (int c = 0; c < C; ++c) {
        dst[c] = (pixel[c] / 255.0f - kMean[c % 3]) / kStd[c % 3];
      }
    }
  }
}

}  // namespace oomlab::scenarios
