#include "scenarios/models/srgan/synthetic_pairs.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <future>
#include <random>

#include "harness/memory/tags.hpp"
#include "kernels/core/check.hpp"
#include "kernels/core/host_values.hpp"

namespace oomlab::srgan {
namespace {

constexpr int kChannels = 3;
constexpr int kUpscale = 4;
constexpr int kRectangles = 4;

}  // namespace

std::vector<float> synthetic_image(std::uint32_t seed, int size) {
  OOMLAB_CHECK(size >= 1, "synthetic_image: size must be >= 1, got " << size);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  auto colour = [&] { return std::array<float, 3>{unit(rng), unit(rng), unit(rng)}; };

  // Background: a linear gradient between two colours along a random direction.
  const auto from = colour(), to = colour();
  const float angle = 6.2831853f * unit(rng);
  const float dir_x = std::cos(angle), dir_y = std::sin(angle);
  // Rectangles with sharp edges (corners in [0,1) image units).
  struct Rect { float x0, y0, x1, y1; std::array<float, 3> rgb; };
  std::vector<Rect> rects;
  for (int i = 0; i < kRectangles; ++i) {
    float ax = unit(rng), bx = unit(rng), ay = unit(rng), by = unit(rng);
    rects.push_back({std::min(ax, bx), std::min(ay, by), std::max(ax, bx), std::max(ay, by), colour()});
  }
  // A disc of stripes: the high-frequency detail a 4x downsampling destroys.
  const float cx = unit(rng), cy = unit(rng), radius = 0.15f + 0.25f * unit(rng);
  const float frequency = 20.0f + 60.0f * unit(rng), stripe_angle = 3.1415926f * unit(rng);
  const float sx = std::cos(stripe_angle), sy = std::sin(stripe_angle);
  const auto stripe_colour = colour();

  std::vector<float> image(static_cast<std::size_t>(size) * size * kChannels);
  for (int y = 0; y < size; ++y) {
    const float v = (y + 0.5f) / size;
    for (int x = 0; x < size; ++x) {
      const float u = (x + 0.5f) / size;
      const float t = std::clamp(0.5f + (u - 0.5f) * dir_x + (v - 0.5f) * dir_y, 0.0f, 1.0f);
      std::array<float, 3> rgb;
      for (int c = 0; c < kChannels; ++c) rgb[c] = from[c] + (to[c] - from[c]) * t;
      for (const Rect& r : rects) {
        if (u >= r.x0 && u < r.x1 && v >= r.y0 && v < r.y1) rgb = r.rgb;
      }
      const float du = u - cx, dv = v - cy;
      if (du * du + dv * dv < radius * radius) {
        const float stripe = 0.5f + 0.5f * std::sin(frequency * (du * sx + dv * sy));
        for (int c = 0; c < kChannels; ++c) rgb[c] = rgb[c] * (1.0f - stripe) + stripe_colour[c] * stripe;
      }
      float* pixel = &image[(static_cast<std::size_t>(y) * size + x) * kChannels];
      for (int c = 0; c < kChannels; ++c) pixel[c] = rgb[c];
    }
  }
  return image;
}

std::vector<float> box_downsample(const std::vector<float>& images, int count, int size, int factor) {
  OOMLAB_CHECK(factor >= 1 && size % factor == 0,
               "box_downsample: size " << size << " is not a multiple of factor " << factor);
  OOMLAB_CHECK(images.size() == static_cast<std::size_t>(count) * size * size * kChannels,
               "box_downsample: " << images.size() << " values for " << count << " images of " << size);
  const int low = size / factor;
  const float inv_area = 1.0f / static_cast<float>(factor * factor);
  std::vector<float> out(static_cast<std::size_t>(count) * low * low * kChannels, 0.0f);
  for (int n = 0; n < count; ++n)
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x)
        for (int c = 0; c < kChannels; ++c) {
          const std::size_t src = ((static_cast<std::size_t>(n) * size + y) * size + x) * kChannels + c;
          const std::size_t dst = ((static_cast<std::size_t>(n) * low + y / factor) * low + x / factor) * kChannels + c;
          out[dst] += images[src] * inv_area;
        }
  return out;
}

SyntheticPairs::SyntheticPairs(std::uint32_t seed, int low_res_size)
    : seed_(seed), low_res_size_(low_res_size) {
  OOMLAB_CHECK(low_res_size >= 1, "SyntheticPairs: low_res_size must be >= 1, got " << low_res_size);
}

SyntheticPairs::~SyntheticPairs() {
  if (pending_.valid()) pending_.wait();  // the worker reads this object
}

HostImageBatch SyntheticPairs::host_batch(int batch_size, std::int64_t index, DType dtype) const {
  OOMLAB_CHECK(batch_size >= 1, "SyntheticPairs::batch: batch_size must be >= 1, got " << batch_size);
  const int high = high_res_size();
  const std::size_t image_values = static_cast<std::size_t>(high) * high * kChannels;
  const std::size_t bytes_per_value = dtype_size(dtype);
  std::vector<float> pixels(image_values * static_cast<std::size_t>(batch_size));
  HostImageBatch out;
  out.batch_size = batch_size;
  out.index = index;
  out.dtype = dtype;
  out.high_res.resize(pixels.size() * bytes_per_value);
  std::vector<std::future<void>> images;
  for (int n = 0; n < batch_size; ++n) {
    // Image (index, n) has its own seed, so a batch does not depend on the batch size before it.
    std::seed_seq image_seed{seed_, static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(n)};
    std::uint32_t s;
    image_seed.generate(&s, &s + 1);
    images.push_back(std::async(std::launch::async, [&, s, n] {
      const std::vector<float> image = synthetic_image(s, high);
      const std::size_t first = image_values * static_cast<std::size_t>(n);
      std::copy(image.begin(), image.end(), pixels.begin() + static_cast<std::ptrdiff_t>(first));
      for (std::size_t i = 0; i < image_values; ++i) store_value(out.high_res.data(), dtype, first + i, image[i]);
    }));
  }
  for (std::future<void>& image : images) image.get();
  const std::vector<float> low = box_downsample(pixels, batch_size, high, kUpscale);
  out.low_res.resize(low.size() * bytes_per_value);
  for (std::size_t i = 0; i < low.size(); ++i) store_value(out.low_res.data(), dtype, i, low[i]);
  return out;
}

void SyntheticPairs::prefetch(const Device& device, int batch_size, std::int64_t index, DType dtype) {
  if (device.is_dry()) return;
  if (pending_.valid()) pending_.wait();
  pending_ = std::async(std::launch::async,
                        [this, batch_size, index, dtype] { return host_batch(batch_size, index, dtype); });
}

ImageBatch SyntheticPairs::batch(Device& device, int batch_size, std::int64_t index, DType dtype) {
  OOMLAB_CHECK(batch_size >= 1, "SyntheticPairs::batch: batch_size must be >= 1, got " << batch_size);
  const int high = high_res_size();
  const Shape low_shape{batch_size, low_res_size_, low_res_size_, kChannels};
  const Shape high_shape{batch_size, high, high, kChannels};
  memory::TagScope tag(memory::Tag::data);
  ImageBatch batch;
  batch.low_res = Tensor::empty(device, low_shape, dtype);
  batch.high_res = Tensor::empty(device, high_shape, dtype);
  if (device.is_dry()) return batch;
  HostImageBatch pixels;
  if (pending_.valid()) pixels = pending_.get();
  if (pixels.batch_size != batch_size || pixels.index != index || pixels.dtype != dtype) {
    pixels = host_batch(batch_size, index, dtype);
  }
  batch.low_res.copy_from_host(pixels.low_res.data(), pixels.low_res.size());
  batch.high_res.copy_from_host(pixels.high_res.data(), pixels.high_res.size());
  return batch;
}

}  // namespace oomlab::srgan
