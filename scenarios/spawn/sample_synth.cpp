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
  // sin(fx*x + fy*y + phase) = sin(fx*x)cos(fy*y + phase) + cos(fx*x)sin(fy*y + phase): the x
  // factors are tabulated once per image and the y factors once per row, so a pixel costs a few
  // multiply-adds, about what a JPEG decoder spends per pixel (the work should look like a real
  // loader's, not like libm's).
  const std::size_t wave_count = waves.size();
  std::vector<float> sin_x(wave_count * S), cos_x(wave_count * S), sin_y(wave_count), cos_y(wave_count);
  for (std::size_t w = 0; w < wave_count; ++w) {
    for (int x = 0; x < S; ++x) {
      sin_x[w * S + x] = std::sin(waves[w].fx * x);
      cos_x[w * S + x] = std::cos(waves[w].fx * x);
    }
  }
  const float cell = static_cast<float>(S - 1) / (kNoiseGrid - 1);
  std::vector<int> x0_of(static_cast<std::size_t>(S));
  std::vector<float> tx_of(static_cast<std::size_t>(S));
  for (int x = 0; x < S; ++x) {
    const float gx = x / cell;
    x0_of[x] = std::min(static_cast<int>(gx), kNoiseGrid - 2);
    tx_of[x] = gx - x0_of[x];
  }
  std::vector<std::uint8_t> decoded(static_cast<std::size_t>(S) * S * C);
  for (int y = 0; y < S; ++y) {
    const float gy = y / cell;
    const int y0 = std::min(static_cast<int>(gy), kNoiseGrid - 2);
    const float ty = gy - y0;
    for (std::size_t w = 0; w < wave_count; ++w) {
      sin_y[w] = std::sin(waves[w].fy * y + waves[w].phase);
      cos_y[w] = std::cos(waves[w].fy * y + waves[w].phase);
    }
    for (int x = 0; x < S; ++x) {
      const int x0 = x0_of[x];
      const float tx = tx_of[x];
      for (int c = 0; c < C; ++c) {
        auto at = [&](int yy, int xx) { return lattice[(static_cast<std::size_t>(yy) * kNoiseGrid + xx) * C + c]; };
        float value = (1 - ty) * ((1 - tx) * at(y0, x0) + tx * at(y0, x0 + 1)) +
                      ty * ((1 - tx) * at(y0 + 1, x0) + tx * at(y0 + 1, x0 + 1));
        value *= 0.5f;
        for (int k = 0; k < kWaves; ++k) {
          const std::size_t w = static_cast<std::size_t>(c) * kWaves + k;
          const float wave = sin_x[w * S + x] * cos_y[w] + cos_x[w * S + x] * sin_y[w];
          value += waves[w].amplitude * (0.5f + 0.5f * wave);
        }
        value = std::fmin(std::fmax(value, 0.0f), 1.0f);
        decoded[(static_cast<std::size_t>(y) * S + x) * C + c] = static_cast<std::uint8_t>(value * 255.0f + 0.5f);
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
