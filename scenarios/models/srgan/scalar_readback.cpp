#include "scenarios/models/srgan/scalar_readback.hpp"

#include <chrono>

#include "kernels/core/check.hpp"

namespace oomlab::srgan {

ScalarReadback::ScalarReadback(Device& device, std::size_t slots)
    : device_(device), slots_(slots), buffer_(device.kind(), slots * sizeof(float), /*zero_filled=*/true) {
  OOMLAB_CHECK(slots >= 1, "ScalarReadback: needs at least one slot");
}

void ScalarReadback::queue(const Tensor& values, std::size_t first) {
  OOMLAB_CHECK(values.dtype() == DType::f32, "ScalarReadback::queue: " << values.describe() << " is not f32");
  OOMLAB_CHECK(&values.device() == &device_,
               "ScalarReadback::queue: " << values.describe() << " is on another device");
  const auto count = static_cast<std::size_t>(values.numel());
  OOMLAB_CHECK(first + count <= slots_, "ScalarReadback::queue: " << count << " values at slot " << first
                                                                  << " overflow " << slots_ << " slots");
  if (device_.is_dry()) return;  // no values there
  auto* slot = static_cast<float*>(buffer_.data()) + first;
  device_.copy_async(slot, values.data(), values.nbytes(),
                     device_.is_cuda() ? CopyKind::device_to_host : CopyKind::host_to_host, device_.stream());
}

void ScalarReadback::wait() {
  const auto start = std::chrono::steady_clock::now();
  device_.synchronize();  // a no-op on host and dry
  last_wait_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

float ScalarReadback::value(std::size_t slot) const {
  OOMLAB_CHECK(slot < slots_, "ScalarReadback::value: slot " << slot << " of " << slots_);
  if (device_.is_dry()) return 0.0f;
  return static_cast<const float*>(buffer_.data())[slot];
}

}  // namespace oomlab::srgan
