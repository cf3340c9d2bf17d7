// Tensor on host and dry: shapes, views and slices sharing storage, tags reaching the allocator
// statistics, memory returned on destruction, and bad shapes rejected with an exception.
#include <gtest/gtest.h>

#include <stdexcept>

#include "kernels/core/tensor.hpp"

namespace oomlab {
namespace {

class TensorOnBackend : public ::testing::TestWithParam<DeviceKind> {
 protected:
  Device device{GetParam(), memory::AllocatorConfig{}};
  bool has_values() const { return GetParam() != DeviceKind::dry; }
};

TEST_P(TensorOnBackend, EmptyHasShapeDtypeAndBytes) {
  Tensor t = Tensor::empty(device, {4, 3, 5}, DType::bf16);
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.ndim(), 3);
  EXPECT_EQ(t.numel(), 60);
  EXPECT_EQ(t.nbytes(), 120u);
  EXPECT_EQ(t.dim(-1), 5);
  EXPECT_EQ(t.dim(0), 4);
  EXPECT_THROW(t.dim(3), std::invalid_argument);
  EXPECT_NE(t.data(), nullptr);
  EXPECT_EQ(&t.device(), &device);
}

TEST_P(TensorOnBackend, DescribeNamesDtypeShapeDeviceAndTag) {
  Tensor t = Tensor::empty(device, {2, 8}, DType::f16, memory::Tag::weights);
  std::string expected = std::string("f16(2, 8) on ") + device_kind_name(GetParam()) + " [weights]";
  EXPECT_EQ(t.describe(), expected);
  EXPECT_EQ(Tensor().describe(), "undefined tensor");
}

TEST_P(TensorOnBackend, TagsReachTheAllocatorStatistics) {
  Tensor weights = Tensor::empty(device, {1024}, DType::f32, memory::Tag::weights);
  Tensor activations;
  {
    memory::TagScope scope(memory::Tag::activations);
    activations = Tensor::empty(device, {256}, DType::f32);
  }
  EXPECT_EQ(activations.tag(), memory::Tag::activations);
  memory::MemoryStats stats = device.allocator().stats();
  EXPECT_EQ(stats.tag(memory::Tag::weights).current, 4096);
  EXPECT_EQ(stats.tag(memory::Tag::activations).current, 1024);
  Tensor other = Tensor::empty(device, {10}, DType::i8);
  EXPECT_EQ(other.tag(), memory::Tag::other);
}

TEST_P(TensorOnBackend, FreeingTheLastReferenceReturnsMemory) {
  Tensor t = Tensor::empty(device, {1000}, DType::f32);
  Tensor view = t.view({10, 100});
  EXPECT_EQ(device.allocator().stats().allocated.current, 4096);  // 4000 rounded to 512
  t.reset();
  EXPECT_EQ(device.allocator().stats().allocated.current, 4096) << "the view still holds it";
  view.reset();
  EXPECT_EQ(device.allocator().stats().allocated.current, 0);
  EXPECT_FALSE(view.defined());
}

TEST_P(TensorOnBackend, ViewsShareStorageAndInferOneDim) {
  Tensor t = Tensor::empty(device, {6, 4}, DType::f32);
  Tensor v = t.view({2, -1, 4});
  EXPECT_EQ(v.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(v.data(), t.data());
  EXPECT_EQ(device.allocator().stats().allocations.current, 1);
}

TEST_P(TensorOnBackend, BadViewShapesThrow) {
  Tensor t = Tensor::empty(device, {6, 4}, DType::f32);
  EXPECT_THROW(t.view({5, 5}), std::invalid_argument);
  EXPECT_THROW(t.view({-1, -1}), std::invalid_argument);
  EXPECT_THROW(t.view({-1, 5}), std::invalid_argument);
  EXPECT_THROW(t.view({-2, -12}), std::invalid_argument);
  EXPECT_THROW(Tensor::empty(device, {3, -1}, DType::f32), std::invalid_argument);
}

TEST_P(TensorOnBackend, SlicesShareStorageAtARowOffset) {
  Tensor t = Tensor::empty(device, {5, 3}, DType::bf16);
  Tensor rows = t.slice(2, 4);
  EXPECT_EQ(rows.shape(), (Shape{2, 3}));
  EXPECT_EQ(static_cast<char*>(rows.data()), static_cast<char*>(t.data()) + 2 * 3 * 2);
  Tensor nested = rows.slice(1, 2);
  EXPECT_EQ(static_cast<char*>(nested.data()), static_cast<char*>(t.data()) + 3 * 3 * 2);
  EXPECT_EQ(t.slice(5, 5).numel(), 0);
  EXPECT_THROW(t.slice(3, 2), std::invalid_argument);
  EXPECT_THROW(t.slice(0, 6), std::invalid_argument);
  EXPECT_THROW(t.slice(-1, 2), std::invalid_argument);
}

TEST_P(TensorOnBackend, FromHostRoundsToTheDtype) {
  Tensor t = Tensor::from_host(device, {2, 2}, DType::bf16, {1.0f, 1.00390625f, -3.0f, 0.1f});
  std::vector<float> values = t.to_host_f32();
  if (!has_values()) {
    EXPECT_TRUE(values.empty()) << "dry holds no values";
    return;
  }
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[1], 1.0f);  // a tie below bf16 resolution rounds to even
  EXPECT_EQ(values[2], -3.0f);
  EXPECT_FLOAT_EQ(values[3], 0.10009765625f);
  EXPECT_THROW(Tensor::from_host(device, {3}, DType::f32, {1.0f, 2.0f}), std::invalid_argument);
}

TEST_P(TensorOnBackend, FillZeroAndCopyThroughViews) {
  Tensor t = Tensor::empty(device, {4, 5}, DType::f32);
  t.fill(2.5);
  t.slice(1, 2).zero();
  Tensor copy = Tensor::empty(device, {20}, DType::f32);
  copy.copy_from(t.view({20}));
  std::vector<float> values = copy.to_host_f32();
  if (!has_values()) return;
  for (int i = 0; i < 20; ++i) EXPECT_EQ(values[i], (i >= 5 && i < 10) ? 0.0f : 2.5f) << i;
}

TEST_P(TensorOnBackend, FillConvertsToEveryDtype) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16, DType::i8, DType::i32, DType::i64}) {
    Tensor t = Tensor::empty(device, {7}, dtype);
    t.fill(-3.0);
    std::vector<float> values = t.to_host_f32();
    if (!has_values()) continue;
    for (float v : values) EXPECT_EQ(v, -3.0f) << dtype_name(dtype);
  }
}

TEST_P(TensorOnBackend, HostCopiesCheckTheByteCount) {
  Tensor t = Tensor::empty(device, {3}, DType::i32);
  std::int32_t in[3] = {7, -8, 9};
  t.copy_from_host(in, sizeof in);
  std::int32_t out[3] = {0, 0, 0};
  t.copy_to_host(out, sizeof out);
  if (has_values()) {
    EXPECT_EQ(out[1], -8);
    EXPECT_EQ(out[2], 9);
  }
  EXPECT_THROW(t.copy_from_host(in, 8), std::invalid_argument);
  EXPECT_THROW(t.copy_to_host(out, 16), std::invalid_argument);
  Tensor other = Tensor::empty(device, {3}, DType::f32);
  EXPECT_THROW(other.copy_from(t), std::invalid_argument) << "dtype differs";
  Tensor longer = Tensor::empty(device, {4}, DType::i32);
  EXPECT_THROW(longer.copy_from(t), std::invalid_argument) << "numel differs";
}

TEST_P(TensorOnBackend, UndefinedTensorThrowsInsteadOfCrashing) {
  Tensor undefined;
  EXPECT_FALSE(undefined.defined());
  EXPECT_THROW(undefined.data(), std::logic_error);
  EXPECT_THROW(undefined.device(), std::logic_error);
  EXPECT_THROW(undefined.view({1}), std::logic_error);
  EXPECT_THROW(undefined.fill(1.0), std::logic_error);
}

INSTANTIATE_TEST_SUITE_P(HostAndDry, TensorOnBackend,
                         ::testing::Values(DeviceKind::host, DeviceKind::dry),
                         [](const auto& info) { return std::string(device_kind_name(info.param)); });

TEST(TensorCrossDevice, DryToHostCopyIsBookkeepingOnly) {
  Device dry(DeviceKind::dry, {});
  Device host(DeviceKind::host, {});
  Tensor on_dry = Tensor::empty(dry, {4}, DType::f32);
  Tensor on_host = Tensor::from_host(host, {4}, DType::f32, {1, 2, 3, 4});
  on_host.copy_from(on_dry);  // no values to move; the host data stays as it was
  EXPECT_EQ(on_host.to_host_f32(), (std::vector<float>{1, 2, 3, 4}));
  on_dry.copy_from(on_host);
  Device host2(DeviceKind::host, {});
  Tensor other_host = Tensor::empty(host2, {4}, DType::f32);
  other_host.copy_from(on_host);
  EXPECT_EQ(other_host.to_host_f32(), (std::vector<float>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace oomlab
