// For GPU tests of stream ordering: work queued on the device's compute stream ahead of the
// code under test, so anything that skips the stream's order shows as a wrong value instead of
// passing because the GPU happened to be idle.
#pragma once
#include "kernels/core/tensor.hpp"

namespace oomlab::srgan {

// Keeps the compute stream busy for a while (~10 ms on an H200): 32 fills of 1 GiB.
inline void occupy_stream(Device& device) {
  Tensor busy = Tensor::empty(device, {256 * 1024 * 1024}, DType::f32);
  for (int i = 0; i < 32; ++i) busy.fill(0.5 + i);
}

}  // namespace oomlab::srgan
