// ScalarReadback on host and dry: queued values land in their slots, a queued tensor may be
// freed at once, bad requests are clear errors, and dry reads 0 without any copy.
#include <gtest/gtest.h>

#include "harness/memory/alloc_config.hpp"
#include "kernels/testing/random_fill.hpp"
#include "scenarios/models/srgan/scalar_readback.hpp"

namespace oomlab::srgan {
namespace {

TEST(ScalarReadback, QueuedValuesLandInTheirSlots) {
  Device device(DeviceKind::host, memory::AllocatorConfig{});
  ScalarReadback readback(device, 5);
  const std::vector<float> values = testing::random_values(3, 7);
  {
    Tensor three = Tensor::from_host(device, {3}, DType::f32, values);
    readback.queue(three, 1);
  }  // freed at once: the copy needs nothing of it later
  Tensor one = Tensor::from_host(device, {1}, DType::f32, {-2.5f});
  readback.queue(one, 4);
  readback.wait();
  EXPECT_EQ(readback.value(0), 0.0f);  // never written
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(readback.value(1 + i), values[i]) << i;
  EXPECT_EQ(readback.value(4), -2.5f);
  EXPECT_GE(readback.last_wait_ms(), 0.0);
}

TEST(ScalarReadback, RejectsWhatItCannotHold) {
  Device device(DeviceKind::host, memory::AllocatorConfig{}), other(DeviceKind::host, memory::AllocatorConfig{});
  EXPECT_THROW(ScalarReadback(device, 0), std::invalid_argument);
  ScalarReadback readback(device, 2);
  EXPECT_THROW(readback.queue(Tensor::zeros(device, {1}, DType::bf16), 0), std::invalid_argument) << "not f32";
  EXPECT_THROW(readback.queue(Tensor::zeros(device, {3}, DType::f32), 0), std::invalid_argument) << "3 > 2 slots";
  EXPECT_THROW(readback.queue(Tensor::zeros(device, {1}, DType::f32), 2), std::invalid_argument) << "past the end";
  EXPECT_THROW(readback.queue(Tensor::zeros(other, {1}, DType::f32), 0), std::invalid_argument) << "other device";
  EXPECT_THROW(readback.value(2), std::invalid_argument);
}

TEST(ScalarReadback, DryHasNoValues) {
  Device device(DeviceKind::dry, memory::AllocatorConfig{});
  ScalarReadback readback(device, 2);
  readback.queue(Tensor::empty(device, {2}, DType::f32), 0);
  readback.wait();
  EXPECT_EQ(readback.value(0), 0.0f);
  EXPECT_EQ(readback.value(1), 0.0f);
}

}  // namespace
}  // namespace oomlab::srgan
