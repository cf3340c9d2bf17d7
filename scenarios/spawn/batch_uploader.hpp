// Moves a batch from the loader (host memory) to a device tensor the way a training loop should:
// on cuda, memcpy into one of two pinned staging buffers, then cudaMemcpyAsync on a copy stream,
// and the compute stream waits on an event (so the host is free to fetch the next batch while
// the copy runs). host: a plain copy; dry: nothing to copy.
#pragma once
#include <cstddef>
#include <cstdint>

#include "harness/device/host_buffer.hpp"
#include "harness/device/stream_event.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::scenarios {

class BatchUploader {
 public:
  BatchUploader(Device& device, std::size_t batch_bytes);
  ~BatchUploader();
  BatchUploader(const BatchUploader&) = delete;
  BatchUploader& operator=(const BatchUploader&) = delete;

  // dst: f32 tensor of batch_bytes on this device. Throws std::invalid_argument on a size mismatch.
  void upload(const float* pixels, Tensor& dst);

 private:
  void release() noexcept;
  Device& device_;
  std::size_t batch_bytes_;
  std::uint64_t uploads_ = 0;
  HostBuffer staging_[2];                        // pinned (cuda only)
  StreamEvent copy_done_[2];                     // staging buffer i may be overwritten after this
  StreamEvent compute_ready_;                    // the destination block is free on the compute stream
  memory::StreamHandle copy_stream_ = 0;
};

}  // namespace oomlab::scenarios
