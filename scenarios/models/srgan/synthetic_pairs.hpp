// Seeded synthetic low/high-resolution image pairs with image-like structure: each
// high-resolution image is a colour gradient, a few sharp-edged rectangles and a disc of
// oriented stripes (texture); its low-resolution partner is the 4x4 box average (what a
// super-resolution model learns to invert). Values in [0, 1], NHWC, 3 channels.
#pragma once
#include <array>
#include <cstdint>
#include <future>
#include <optional>
#include <vector>

#include "harness/device/host_buffer.hpp"
#include "harness/device/stream_event.hpp"
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
  // when prefetch() was called for this batch. The upload is queued on the device's compute
  // stream and not waited for (pin_memory=True, non_blocking=True): kernels launched after it
  // see the pixels; the host goes on at once.
  ImageBatch batch(Device& device, int batch_size, std::int64_t index, DType dtype);

  // Starts generating batch `index`'s pixels on a background thread (a DataLoader worker's
  // job): the next step's images are made while this step runs on the GPU. Host memory only
  // (pinned on cuda), so the device allocations are the same with or without it. Nothing to
  // do on dry.
  void prefetch(const Device& device, int batch_size, std::int64_t index, DType dtype);

  // The pixels of batch `index` in `dtype`, rendered in bands on a team of threads.
  HostImageBatch host_batch(int batch_size, std::int64_t index, DType dtype) const;

  // What the last batch() cost the calling thread, for a run's metrics (all 0 on dry): a
  // training step that waits here is a GPU waiting on the data path.
  struct BatchTiming {
    bool prefetched = false;  // made ahead by prefetch(); else rendered on demand in batch()
    double wait_ms = 0;       // batch() blocked for the pixels (the worker's rest, or the render)
    double render_ms = 0;     // the rendering itself, on whichever thread did it
  };
  const BatchTiming& last_timing() const { return last_timing_; }

  int low_res_size() const { return low_res_size_; }
  int high_res_size() const { return low_res_size_ * 4; }

 private:
  // Host memory a batch is rendered into and uploaded from: pinned on cuda (a 25 MB bf16 /
  // 50 MB f32 full-scale batch took 3.5-7 ms of blocking pageable copy at ~7 GB/s, the largest
  // host gap between H200 steps; pinned it is a ~50 GB/s DMA the host does not wait for).
  struct Staging {
    HostBuffer low_res, high_res;
    std::optional<StreamEvent> uploaded;  // recorded after each upload from this staging
    int batch_size = 0;                   // what it holds; 0: nothing yet (or being rendered)
    std::int64_t index = -1;
    DType dtype = DType::f32;
    double render_ms = 0;                 // how long filling it took
    bool holds(int batch, std::int64_t at, DType type) const {
      return batch_size == batch && index == at && dtype == type;
    }
  };

  // The pixels of batch `index` into `low_res` / `high_res` (in `dtype`).
  void render(int batch_size, std::int64_t index, DType dtype, unsigned char* low_res,
              unsigned char* high_res) const;
  // render() into a claimed staging, then record what it holds.
  void fill(Staging& staging, int batch_size, std::int64_t index, DType dtype) const;
  std::size_t low_res_bytes(int batch_size, DType dtype) const;
  std::size_t high_res_bytes(int batch_size, DType dtype) const;
  // The staging to render into next, once the upload last made from it has finished reading
  // it. Two alternate, so the worker renders batch i+1 while batch i's copy may still run.
  Staging& claim_staging(DeviceKind kind, int batch_size, DType dtype);
  // Waits for the prefetch worker; the staging it filled, or nullptr when none was pending.
  Staging* finish_prefetch();
  void wait_for_uploads() const;

  std::uint32_t seed_;
  int low_res_size_;
  std::optional<DeviceKind> staging_kind_;  // the kind the stagings were made for
  std::array<Staging, 2> staging_;
  int next_staging_ = 0;
  Staging* prefetched_ = nullptr;  // what pending_ renders into
  std::future<void> pending_;      // the prefetch worker, if any
  BatchTiming last_timing_;
};

}  // namespace oomlab::srgan
