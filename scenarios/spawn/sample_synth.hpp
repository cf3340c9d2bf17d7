// The CPU work a data-loader worker does per sample, standing in for JPEG decode + augmentation:
// "decode" a procedural texture at source resolution (a few oriented sinusoids plus bilinear
// value noise, quantised to 8 bits as a decoder would), take a random crop, flip it at random,
// and normalise it to f32 with per-channel mean and std. Deterministic in (seed, sample id), so
// every process produces the same sample for the same id.
#pragma once
#include <cstddef>
#include <cstdint>

namespace oomlab::scenarios {

struct ImageSpec {
  int source_size = 80;  // decoded image side (pixels)
  int crop_size = 64;    // side after the random crop
  int channels = 3;
  std::size_t floats_per_sample() const {
    return static_cast<std::size_t>(crop_size) * crop_size * channels;
  }
};

// Writes sample `sample_id` as (crop_size, crop_size, channels) f32, channels last, into `out`.
// Throws std::invalid_argument when crop_size > source_size or a size is not positive.
void synthesize_sample(const ImageSpec& spec, std::uint64_t seed, std::int64_t sample_id,
                       float* out);

}  // namespace oomlab::scenarios
