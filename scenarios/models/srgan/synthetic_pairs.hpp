// Seeded synthetic low/high-resolution image pairs with image-like structure: each
// high-resolution image is a colour gradient, a few sharp-edged rectangles and a disc of
// oriented stripes (texture); its low-resolution partner is the 4x4 box average (what a
// super-resolution model learns to invert). Values in [0, 1], NHWC, 3 channels.
#pragma once
#include <cstdint>
#include <future>
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

// A batch's pixels in host memory, already in the tensors' dtype: the upload is one copy.
struct HostImageBatch {
  int batch_size = 0;
  std::int64_t index = -1;
  DType dtype = DType::f32;
  std::vector<unsigned char> low_res, high_res;
};

class SyntheticPairs {
 public:
  // Low-resolution side `low_res_size` square; the high-resolution side is 4x larger.
  SyntheticPairs(std::uint32_t seed, int low_res_size);
  ~SyntheticPairs();
  SyntheticPairs(const SyntheticPairs&) = delete;
  SyntheticPairs& operator=(const SyntheticPairs&) = delete;

  // Batch `index` (the same index always gives the same images), allocated under Tag::data.
  // On dry the tensors are allocated but no pixels are generated. Uses the prefetched pixels
  // when prefetch() was called for this batch.
  ImageBatch batch(Device& device, int batch_size, std::int64_t index, DType dtype);

  // Starts generating batch `index`'s pixels on a background thread (a DataLoader worker's
  // job): the next step's images are made while this step runs on the GPU. Host memory only,
  // so the device allocations are the same with or without it. Nothing to do on dry.
  void prefetch(const Device& device, int batch_size, std::int64_t index, DType dtype);

  // The pixels of batch `index` in `dtype`, one thread per image.
  HostImageBatch host_batch(int batch_size, std::int64_t index, DType dtype) const;

  int low_res_size() const { return low_res_size_; }
  int high_res_size() const { return low_res_size_ * 4; }

 private:
  std::uint32_t seed_;
  int low_res_size_;
  std::future<HostImageBatch> pending_;  // the prefetched batch, if any
};

}  // namespace oomlab::srgan
