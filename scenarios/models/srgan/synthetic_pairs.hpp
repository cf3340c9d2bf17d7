// Seeded synthetic low/high-resolution image pairs with image-like structure: each
// high-resolution image is a colour gradient, a few sharp-edged rectangles and a disc of
// oriented stripes (texture); its low-resolution partner is the 4x4 box average (what a
// super-resolution model learns to invert). Values in [0, 1], NHWC, 3 channels.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/core/tensor.hpp"

namespace oomlab::srgan {

struct ImageBatch {
  Tensor low_res;   // (N, H, W, 3)     [data]
  Tensor high_res;  // (N, 4H, 4W, 3)   [data]
};

// One high-resolution image (size x size x 3, row-major HWC) from `seed`.
std::vector<float> synthetic_image(std::uint32_t seed, int size);
// Box-average downsampling of `count` HWC images of size x size x 3 by `factor`.
std::vector<float> box_downsample(const std::vector<float>& images, int count, int size, int factor);

class SyntheticPairs {
 public:
  // Low-resolution side `low_res_size` square; the high-resolution side is 4x larger.
  SyntheticPairs(std::uint32_t seed, int low_res_size);

  // Batch `index` (the same index always gives the same images), allocated under Tag::data.
  // On dry the tensors are allocated but no pixels are generated.
  ImageBatch batch(Device& device, int batch_size, std::int64_t index, DType dtype) const;

  int low_res_size() const { return low_res_size_; }
  int high_res_size() const { return low_res_size_ * 4; }

 private:
  std::uint32_t seed_;
  int low_res_size_;
};

}  // namespace oomlab::srgan
