#include "scenarios/spawn/batch_uploader.hpp"

#include <cstring>
#include <stdexcept>


namespace oomlab::scenarios {

BatchUploader::BatchUploader(Device& device, std::size_t batch_bytes)
    : device_(device),
      batch_bytes_(batch_bytes),
      copy_done_{StreamEvent(device.kind()), StreamEvent(device.kind())},
      compute_ready_(device.kind()) {
  if (!device.is_cuda()) return;
  try {
    for (HostBuffer& staging : staging_) staging = HostBuffer(device.kind(), batch_bytes);
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
    for (const StreamEvent& event : copy_done_) event.synchronize();  // no copy may still read staging
    if (copy_stream_) device_.destroy_stream(copy_stream_);
  } catch (...) {
    // Destruction after a device error: nothing more can be done; the process's context goes.
  }
  copy_stream_ = 0;
  for (HostBuffer& staging : staging_) staging = HostBuffer();
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
  copy_done_[i].synchronize();  // the copy that last read this buffer is done
  std::memcpy(staging_[i].data(), pixels, batch_bytes_);
  // dst's block is free in compute-stream order; the copy stream must not write it earlier.
  compute_ready_.record(device_.stream());
  compute_ready_.make_stream_wait(copy_stream_);
  device_.copy_async(dst.data(), staging_[i].data(), batch_bytes_, CopyKind::host_to_device, copy_stream_);
  copy_done_[i].record(copy_stream_);
  copy_done_[i].make_stream_wait(device_.stream());
}

}  // namespace oomlab::scenarios
