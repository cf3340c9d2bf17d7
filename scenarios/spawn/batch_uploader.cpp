#include "scenarios/spawn/batch_uploader.hpp"

#include <cstring>
#include <stdexcept>

#include "scenarios/spawn/cuda_support.hpp"

namespace oomlab::scenarios {

BatchUploader::BatchUploader(Device& device, std::size_t batch_bytes)
    : device_(device), batch_bytes_(batch_bytes) {
  if (!device.is_cuda()) return;
  try {
    for (int i = 0; i < 2; ++i) {
      staging_[i] = spawn_cuda::pinned_alloc(batch_bytes);
      copy_done_[i] = spawn_cuda::event_create();
    }
    compute_ready_ = spawn_cuda::event_create();
    copy_stream_ = device.create_stream();
  } catch (...) {
    release();
    throw;
  }
}

BatchUploader::~BatchUploader() { release(); }

void BatchUploader::release() noexcept {
  if (!device_.is_cuda()) return;
  try {
    for (std::uintptr_t event : copy_done_) {
      if (event) spawn_cuda::event_synchronize(event);  // no copy may still read a staging buffer
    }
    if (copy_stream_) device_.destroy_stream(copy_stream_);
  } catch (...) {
    // Destruction after a device error: nothing more can be done; the process's context goes.
  }
  copy_stream_ = 0;
  for (int i = 0; i < 2; ++i) {
    spawn_cuda::pinned_free(staging_[i]);
    spawn_cuda::event_destroy(copy_done_[i]);
    staging_[i] = nullptr;
    copy_done_[i] = 0;
  }
  spawn_cuda::event_destroy(compute_ready_);
  compute_ready_ = 0;
}

void BatchUploader::upload(const float* pixels, Tensor& dst) {
  if (dst.nbytes() != batch_bytes_) {
    throw std::invalid_argument("BatchUploader: batch of " + std::to_string(batch_bytes_) +
                                " bytes into " + dst.describe());
  }
  if (!device_.is_cuda()) {
    dst.copy_from_host(pixels, batch_bytes_);  // host: memcpy; dry: no backing, nothing to do
    return;
  }
  const int i = static_cast<int>(uploads_++ % 2);
  spawn_cuda::event_synchronize(copy_done_[i]);  // the copy that last read this buffer is done
  std::memcpy(staging_[i], pixels, batch_bytes_);
  // dst's block is free in compute-stream order; the copy stream must not write it earlier.
  spawn_cuda::event_record(compute_ready_, device_.stream());
  spawn_cuda::stream_wait_event(copy_stream_, compute_ready_);
  device_.copy_async(dst.data(), staging_[i], batch_bytes_, CopyKind::host_to_device, copy_stream_);
  spawn_cuda::event_record(copy_done_[i], copy_stream_);
  spawn_cuda::stream_wait_event(device_.stream(), copy_done_[i]);
}

}  // namespace oomlab::scenarios
