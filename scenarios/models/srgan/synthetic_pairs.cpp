#include "scenarios/models/srgan/synthetic_pairs.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <future>
#include <random>
#include <utility>

#include "harness/memory/tags.hpp"
#include "harness/parallel/thread_team.hpp"
#include "kernels/core/check.hpp"
#include "kernels/core/host_values.hpp"

namespace oomlab::srgan {
namespace {

constexpr int kChannels = 3;
constexpr int kUpscale = 4;
constexpr int kRectangles = 4;

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

namespace {

// What an image shows, drawn from its seed; rendered row by row.
struct ImageRecipe {
  std::array<float, 3> from, to;
  float dir_x, dir_y;
  struct Rect { float x0, y0, x1, y1; std::array<float, 3> rgb; };
  std::array<Rect, kRectangles> rects;
  float cx, cy, radius, frequency, sx, sy;
  std::array<float, 3> stripe_colour;
};

ImageRecipe image_recipe(std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  auto colour = [&] { return std::array<float, 3>{unit(rng), unit(rng), unit(rng)}; };
  ImageRecipe r;
  // Background: a linear gradient between two colours along a random direction.
  r.from = colour();
  r.to = colour();
  const float angle = 6.2831853f * unit(rng);
  r.dir_x = std::cos(angle);
  r.dir_y = std::sin(angle);
  // Rectangles with sharp edges (corners in [0,1) image units).
  for (ImageRecipe::Rect& rect : r.rects) {
    float ax = unit(rng), bx = unit(rng), ay = unit(rng), by = unit(rng);
    rect = {std::min(ax, bx), std::min(ay, by), std::max(ax, bx), std::max(ay, by), colour()};
  }
  // A disc of stripes: the high-frequency detail a 4x downsampling destroys.
  r.cx = unit(rng);
  r.cy = unit(rng);
  r.radius = 0.15f + 0.25f * unit(rng);
  r.frequency = 20.0f + 60.0f * unit(rng);
  const float stripe_angle = 3.1415926f * unit(rng);
  r.sx = std::cos(stripe_angle);
  r.sy = std::sin(stripe_angle);
  r.stripe_colour = colour();
  return r;
}

// Rows [y0, y1) of a size x size image into `rows` (HWC values, row y0 first).
void render_rows(const ImageRecipe& r, int size, int y0, int y1, float* rows) {
  for (int y = y0; y < y1; ++y) {
    const float v = (y + 0.5f) / size;
    for (int x = 0; x < size; ++x) {
      const float u = (x + 0.5f) / size;
      const float t = std::clamp(0.5f + (u - 0.5f) * r.dir_x + (v - 0.5f) * r.dir_y, 0.0f, 1.0f);
      std::array<float, 3> rgb;
      for (int c = 0; c < kChannels; ++c) rgb[c] = r.from[c] + (r.to[c] - r.from[c]) * t;
      for (const ImageRecipe::Rect& rect : r.rects) {
        if (u >= rect.x0 && u < rect.x1 && v >= rect.y0 && v < rect.y1) rgb = rect.rgb;
      }
      const float du = u - r.cx, dv = v - r.cy;
      if (du * du + dv * dv < r.radius * r.radius) {
        const float stripe = 0.5f + 0.5f * std::sin(r.frequency * (du * r.sx + dv * r.sy));
        for (int c = 0; c < kChannels; ++c) rgb[c] = rgb[c] * (1.0f - stripe) + r.stripe_colour[c] * stripe;
      }
      float* pixel = &rows[(static_cast<std::size_t>(y - y0) * size + x) * kChannels];
      for (int c = 0; c < kChannels; ++c) pixel[c] = rgb[c];
    }
  }
}

// Low-resolution rows [low_y0, low_y1) of one image: box averages of factor x factor pixels.
void downsample_rows(const float* image, int size, int factor, int low_y0, int low_y1, float* low) {
  const int low_size = size / factor;
  const float inv_area = 1.0f / static_cast<float>(factor * factor);
  for (int ly = low_y0; ly < low_y1; ++ly)
    for (int lx = 0; lx < low_size; ++lx)
      for (int c = 0; c < kChannels; ++c) {
        float sum = 0.0f;
        for (int dy = 0; dy < factor; ++dy)
          for (int dx = 0; dx < factor; ++dx) {
            sum += image[((static_cast<std::size_t>(ly) * factor + dy) * size + lx * factor + dx) * kChannels + c];
          }
        low[(static_cast<std::size_t>(ly) * low_size + lx) * kChannels + c] = sum * inv_area;
      }
}

}  // namespace

std::vector<float> synthetic_image(std::uint32_t seed, int size) {
  OOMLAB_CHECK(size >= 1, "synthetic_image: size must be >= 1, got " << size);
  std::vector<float> image(static_cast<std::size_t>(size) * size * kChannels);
  render_rows(image_recipe(seed), size, 0, size, image.data());
  return image;
}

std::vector<float> box_downsample(const std::vector<float>& images, int count, int size, int factor) {
  OOMLAB_CHECK(factor >= 1 && size % factor == 0,
               "box_downsample: size " << size << " is not a multiple of factor " << factor);
  OOMLAB_CHECK(images.size() == static_cast<std::size_t>(count) * size * size * kChannels,
               "box_downsample: " << images.size() << " values for " << count << " images of " << size);
  const int low = size / factor;
  const std::size_t image_values = static_cast<std::size_t>(size) * size * kChannels;
  const std::size_t low_values = static_cast<std::size_t>(low) * low * kChannels;
  std::vector<float> out(low_values * static_cast<std::size_t>(count));
  for (int n = 0; n < count; ++n) {
    downsample_rows(images.data() + n * image_values, size, factor, 0, low, out.data() + n * low_values);
  }
  return out;
}

SyntheticPairs::SyntheticPairs(std::uint32_t seed, int low_res_size)
    : seed_(seed), low_res_size_(low_res_size) {
  OOMLAB_CHECK(low_res_size >= 1, "SyntheticPairs: low_res_size must be >= 1, got " << low_res_size);
}

SyntheticPairs::~SyntheticPairs() {
  if (pending_.valid()) pending_.wait();  // the worker writes into this object
  try {
    wait_for_uploads();  // a pinned staging must outlive the copy reading it
  } catch (...) {
    // A failed CUDA call here would be reported by the next one on the stream; a destructor
    // must not throw.
  }
}

std::size_t SyntheticPairs::low_res_bytes(int batch_size, DType dtype) const {
  return static_cast<std::size_t>(batch_size) * low_res_size_ * low_res_size_ * kChannels * dtype_size(dtype);
}

std::size_t SyntheticPairs::high_res_bytes(int batch_size, DType dtype) const {
  return static_cast<std::size_t>(batch_size) * high_res_size() * high_res_size() * kChannels * dtype_size(dtype);
}

void SyntheticPairs::render(int batch_size, std::int64_t index, DType dtype, unsigned char* low_res,
                            unsigned char* high_res) const {
  const int high = high_res_size(), low = low_res_size_;
  const std::size_t image_values = static_cast<std::size_t>(high) * high * kChannels;
  const std::size_t low_values = static_cast<std::size_t>(low) * low * kChannels;
  const std::size_t row_values = static_cast<std::size_t>(high) * kChannels;
  const std::size_t low_row_values = static_cast<std::size_t>(low) * kChannels;
  std::vector<ImageRecipe> recipes;
  for (int n = 0; n < batch_size; ++n) {
    // Image (index, n) has its own seed, so a batch does not depend on the batch size before it.
    std::seed_seq image_seed{seed_, static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(n)};
    std::uint32_t s;
    image_seed.generate(&s, &s + 1);
    recipes.push_back(image_recipe(s));
  }
  // One task per low-resolution row of one image: its kUpscale high-resolution rows are rendered
  // into a small buffer that stays in cache, averaged into the low row, and both are stored in
  // the batch dtype; the threads take tasks in turn. (Four bands per image rendered into a whole
  // f32 batch, 50 MB allocated per call, took 55 ms per batch on the H200's 16 cores: more than
  // the bf16 step's 43 ms of GPU work, so each step waited ~12 ms for its images; 2efe4a7.)
  ThreadTeam().for_each(static_cast<std::size_t>(batch_size) * low, [&](std::size_t task) {
    const int n = static_cast<int>(task) / low, ly = static_cast<int>(task) % low;
    std::vector<float> rows(row_values * kUpscale), low_row(low_row_values);
    render_rows(recipes[n], high, ly * kUpscale, (ly + 1) * kUpscale, rows.data());
    downsample_rows(rows.data(), high, kUpscale, 0, 1, low_row.data());
    const std::size_t first = image_values * n + row_values * ly * kUpscale;
    for (std::size_t i = 0; i < rows.size(); ++i) store_value(high_res, dtype, first + i, rows[i]);
    const std::size_t low_first = low_values * n + low_row_values * ly;
    for (std::size_t i = 0; i < low_row.size(); ++i) store_value(low_res, dtype, low_first + i, low_row[i]);
  });
}

HostImageBatch SyntheticPairs::host_batch(int batch_size, std::int64_t index, DType dtype) const {
  OOMLAB_CHECK(batch_size >= 1, "SyntheticPairs::host_batch: batch_size must be >= 1, got " << batch_size);
  HostImageBatch out;
  out.batch_size = batch_size;
  out.index = index;
  out.dtype = dtype;
  out.low_res.resize(low_res_bytes(batch_size, dtype));
  out.high_res.resize(high_res_bytes(batch_size, dtype));
  render(batch_size, index, dtype, out.low_res.data(), out.high_res.data());
  return out;
}

void SyntheticPairs::fill(Staging& staging, int batch_size, std::int64_t index, DType dtype) const {
  const auto start = std::chrono::steady_clock::now();
  render(batch_size, index, dtype, static_cast<unsigned char*>(staging.low_res.data()),
         static_cast<unsigned char*>(staging.high_res.data()));
  staging.batch_size = batch_size;
  staging.index = index;
  staging.dtype = dtype;
  staging.render_ms = milliseconds_since(start);
}

void SyntheticPairs::wait_for_uploads() const {
  for (const Staging& staging : staging_) {
    if (staging.uploaded) staging.uploaded->synchronize();
  }
}

SyntheticPairs::Staging& SyntheticPairs::claim_staging(DeviceKind kind, int batch_size, DType dtype) {
  if (staging_kind_ != kind) {  // pinned or not, and events, depend on the device kind
    wait_for_uploads();
    for (Staging& staging : staging_) {
      staging.uploaded.reset();
      staging.low_res = HostBuffer();
      staging.high_res = HostBuffer();
      staging.batch_size = 0;
    }
    staging_kind_ = kind;
  }
  Staging& staging = staging_[next_staging_];
  next_staging_ = 1 - next_staging_;
  // Normally long finished: the upload from this staging was two batches ago.
  if (staging.uploaded) staging.uploaded->synchronize();
  if (!staging.uploaded) staging.uploaded.emplace(kind);
  staging.batch_size = 0;
  // Grown only, so the pinned allocation (slow: it maps and locks pages) is made once per size.
  const std::size_t low_bytes = low_res_bytes(batch_size, dtype), high_bytes = high_res_bytes(batch_size, dtype);
  if (staging.low_res.bytes() < low_bytes) staging.low_res = HostBuffer(kind, low_bytes);
  if (staging.high_res.bytes() < high_bytes) staging.high_res = HostBuffer(kind, high_bytes);
  return staging;
}

SyntheticPairs::Staging* SyntheticPairs::finish_prefetch() {
  if (!pending_.valid()) return nullptr;
  Staging* staging = std::exchange(prefetched_, nullptr);
  pending_.get();  // rethrows what the worker threw
  return staging;
}

void SyntheticPairs::prefetch(const Device& device, int batch_size, std::int64_t index, DType dtype) {
  OOMLAB_CHECK(batch_size >= 1, "SyntheticPairs::prefetch: batch_size must be >= 1, got " << batch_size);
  if (device.is_dry()) return;
  finish_prefetch();
  // Claimed here, not on the worker: the CUDA calls (event wait, pinned allocation) stay on the
  // thread that owns the device.
  Staging& staging = claim_staging(device.kind(), batch_size, dtype);
  prefetched_ = &staging;
  pending_ = std::async(std::launch::async,
                        [this, &staging, batch_size, index, dtype] { fill(staging, batch_size, index, dtype); });
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
  last_timing_ = {};
  if (device.is_dry()) return batch;
  const auto start = std::chrono::steady_clock::now();
  Staging* staging = finish_prefetch();
  last_timing_.prefetched = true;
  if (staging == nullptr || staging_kind_ != device.kind() || !staging->holds(batch_size, index, dtype)) {
    staging = &claim_staging(device.kind(), batch_size, dtype);
    fill(*staging, batch_size, index, dtype);
    last_timing_.prefetched = false;
  }
  last_timing_.wait_ms = milliseconds_since(start);
  last_timing_.render_ms = staging->render_ms;
  // Ordered before every kernel of the step on the same stream; the staging is not rewritten
  // until `uploaded` has passed (claim_staging waits for it).
  const CopyKind kind = device.is_cuda() ? CopyKind::host_to_device : CopyKind::host_to_host;
  device.copy_async(batch.low_res.data(), staging->low_res.data(), batch.low_res.nbytes(), kind, device.stream());
  device.copy_async(batch.high_res.data(), staging->high_res.data(), batch.high_res.nbytes(), kind,
                    device.stream());
  staging->uploaded->record(device.stream());
  return batch;
}

}  // namespace oomlab::srgan
