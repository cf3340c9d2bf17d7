// Tensor on cuda: h2d/d2h/d2d copies, fill through the CUDA kernel for every dtype, slices, and
// the host bf16/f16 conversions against CUDA's intrinsics bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "harness/testing/require_gpu.hpp"
#include "kernels/core/tensor.hpp"
#include "kernels/core/tests/dtype_gpu_convert.hpp"

namespace oomlab {
namespace {

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> values(n);
  for (float& v : values) v = dist(rng);
  return values;
}

TEST(TensorGpu, HostDeviceRoundTripAndDeviceCopy) {
  OOMLAB_REQUIRE_GPU();
  Device cuda(DeviceKind::cuda, {});
  std::vector<float> values = random_values(1000, 1);
  Tensor a = Tensor::from_host(cuda, {10, 100}, DType::f32, values);
  EXPECT_EQ(a.to_host_f32(), values);
  Tensor b = Tensor::empty(cuda, {1000}, DType::f32);
  b.copy_from(a.view({1000}));
  EXPECT_EQ(b.to_host_f32(), values);

  Device host(DeviceKind::host, {});
  Tensor on_host = Tensor::empty(host, {10, 100}, DType::f32);
  on_host.copy_from(a);  // d2h
  EXPECT_EQ(on_host.to_host_f32(), values);
  Tensor back = Tensor::empty(cuda, {10, 100}, DType::f32);
  back.copy_from(on_host);  // h2d
  EXPECT_EQ(back.to_host_f32(), values);
}

TEST(TensorGpu, SliceCopiesTheRightRows) {
  OOMLAB_REQUIRE_GPU();
  Device cuda(DeviceKind::cuda, {});
  std::vector<float> values = random_values(7 * 3, 2);
  Tensor a = Tensor::from_host(cuda, {7, 3}, DType::bf16, values);
  std::vector<float> all = a.to_host_f32();
  std::vector<float> rows = a.slice(2, 5).to_host_f32();
  ASSERT_EQ(rows.size(), 9u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(rows[i], all[6 + i]);
}

TEST(TensorGpu, FillAndZeroEveryDtype) {
  OOMLAB_REQUIRE_GPU();
  Device cuda(DeviceKind::cuda, {});
  for (DType dtype : {DType::f32, DType::bf16, DType::f16, DType::i8, DType::i32, DType::i64}) {
    for (std::int64_t n : {1, 333, (1 << 20) + 3}) {
      Tensor t = Tensor::empty(cuda, {n}, dtype);
      t.fill(-5.0);
      t.slice(n - 1, n).zero();
      std::vector<float> values = t.to_host_f32();
      ASSERT_EQ(values.size(), static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i + 1 < n; ++i) ASSERT_EQ(values[i], -5.0f) << dtype_name(dtype) << " " << i;
      EXPECT_EQ(values[n - 1], 0.0f);
    }
  }
}

TEST(TensorGpu, FillCoversBuffersLargerThanTheCappedGrid) {
  OOMLAB_REQUIRE_GPU();
  Device cuda(DeviceKind::cuda, {});
  const std::int64_t n = 65535LL * 8 * 256 + 5;  // past the fill kernel's grid cap
  Tensor t = Tensor::empty(cuda, {n}, DType::i8);
  t.fill(7.0);
  std::vector<std::int8_t> bytes(static_cast<std::size_t>(n));
  t.copy_to_host(bytes.data(), bytes.size());
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(bytes[i], 7) << i;
}

TEST(TensorGpu, HostConversionsMatchCudaIntrinsicsBitForBit) {
  OOMLAB_REQUIRE_GPU();
  Device cuda(DeviceKind::cuda, {});
  // Every f32 that a bf16/f16 decodes to, its neighbours (ties and near-ties), and random bits.
  std::vector<std::uint32_t> bits;
  for (std::uint32_t p = 0; p <= 0xFFFF; ++p) {
    std::uint32_t base = p << 16;
    for (std::uint32_t delta : {0u, 1u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu, 0x1000u, 0x3000u})
      bits.push_back(base + delta);
  }
  std::mt19937 rng(3);
  for (int i = 0; i < (1 << 20); ++i) bits.push_back(rng());
  std::size_t n = bits.size();
  Tensor in = Tensor::empty(cuda, {static_cast<std::int64_t>(n)}, DType::f32);
  in.copy_from_host(bits.data(), n * 4);
  Tensor bf16 = Tensor::empty(cuda, {static_cast<std::int64_t>(n)}, DType::bf16);
  Tensor f16 = Tensor::empty(cuda, {static_cast<std::int64_t>(n)}, DType::f16);
  testing::convert_with_cuda_intrinsics(in.data_as<float>(), n, bf16.data_as<std::uint16_t>(),
                                        f16.data_as<std::uint16_t>(), cuda.stream());
  std::vector<std::uint16_t> bf16_bits(n), f16_bits(n);
  bf16.copy_to_host(bf16_bits.data(), n * 2);
  f16.copy_to_host(f16_bits.data(), n * 2);
  std::size_t bf16_mismatch = 0, f16_mismatch = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float value;
    std::memcpy(&value, &bits[i], 4);
    if (float_to_bf16_bits(value) != bf16_bits[i] && bf16_mismatch++ < 5) {
      ADD_FAILURE() << "bf16 of 0x" << std::hex << bits[i] << ": host " << float_to_bf16_bits(value)
                    << " cuda " << bf16_bits[i];
    }
    if (float_to_f16_bits(value) != f16_bits[i] && f16_mismatch++ < 5) {
      ADD_FAILURE() << "f16 of 0x" << std::hex << bits[i] << ": host " << float_to_f16_bits(value)
                    << " cuda " << f16_bits[i];
    }
  }
  EXPECT_EQ(bf16_mismatch, 0u);
  EXPECT_EQ(f16_mismatch, 0u);
}

}  // namespace
}  // namespace oomlab
