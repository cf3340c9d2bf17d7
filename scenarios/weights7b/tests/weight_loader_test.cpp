// The loaders called directly on host: tensor-by-tensor equality and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "harness/memory/size.hpp"

#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/models/safetensors/tests/temp_dir.hpp"
#include "scenarios/weights7b/tests/weights7b_test_support.hpp"
#include "scenarios/weights7b/weight_loader.hpp"
#include "scenarios/weights7b/weights_check.hpp"

namespace oomlab::scenarios::weights7b {
namespace {

constexpr std::uint64_t kSeed = 11;

struct TinyFiles {
  safetensors::testing::TempDir dir;
  std::string f32 = dir.file("f32.safetensors");
  std::string bf16 = dir.file("bf16.safetensors");
  TinyFiles() {
    const auto& tiny = safetensors::llama_preset("llama-tiny");
    safetensors::generate_llama_checkpoint(f32, tiny, DType::f32, kSeed);
    safetensors::generate_llama_checkpoint(bf16, tiny, DType::bf16, kSeed);
  }
};

Device host_device() {
  memory::AllocatorConfig config;
  config.budget = 1 * GiB;
  return Device(DeviceKind::host, config);
}

std::vector<std::uint8_t> bytes_of(const Tensor& t) {
  std::vector<std::uint8_t> bytes(t.nbytes());
  t.copy_to_host(bytes.data(), bytes.size());
  return bytes;
}

TEST(WeightLoader, StreamedAndWholeFileLoadsAreBitIdenticalTensorByTensor) {
  TinyFiles files;
  memory::AllocatorConfig config;
  config.budget = 1 * GiB;
  Device device(DeviceKind::host, config);
  const CheckpointSource f32 = CheckpointSource::open(files.f32);
  const CheckpointSource bf16 = CheckpointSource::open(files.bf16);
  LoadStats whole_stats, stream_stats, direct_stats;
  const LoadedWeights whole = load_whole_file_then_cast(device, f32, whole_stats);
  // A chunk smaller than most tensors, and not a multiple of their sizes.
  const LoadedWeights streamed = stream_load(device, f32, WeightFormat::bf16, 96 * KiB, stream_stats);
  const LoadedWeights direct = stream_load(device, bf16, WeightFormat::bf16, 96 * KiB, direct_stats);
  ASSERT_EQ(whole.tensors.size(), f32.tensors().size());
  for (const TensorEntry& entry : f32.tensors()) {
    const auto expected = bytes_of(whole.tensors.at(entry.name));
    EXPECT_EQ(whole.tensors.at(entry.name).dtype(), DType::bf16);
    EXPECT_EQ(bytes_of(streamed.tensors.at(entry.name)), expected) << entry.name;
    EXPECT_EQ(bytes_of(direct.tensors.at(entry.name)), expected) << entry.name;
    // ... and they are the generator's values rounded to bf16.
    std::uint16_t last = 0;
    std::memcpy(&last, expected.data() + expected.size() - 2, 2);
    const float value = safetensors::llama_value(kSeed, &entry - f32.tensors().data(),
                                                 entry.shape.size() == 1, entry.numel() - 1);
    EXPECT_EQ(last, float_to_bf16_bits(value)) << entry.name;
  }
  EXPECT_EQ(whole_stats.file_bytes, f32.data_bytes());
  EXPECT_EQ(stream_stats.file_bytes, f32.data_bytes());
  EXPECT_EQ(direct_stats.file_bytes, bf16.data_bytes());
  EXPECT_EQ(stream_stats.device_staging_bytes, 2 * 96 * KiB);
  EXPECT_EQ(direct_stats.device_staging_bytes, 0u);
}

TEST(WeightLoader, Int8KeepsNormsInBf16AndGivesEveryMatrixRowAScale) {
  TinyFiles files;
  Device device = host_device();
  const CheckpointSource f32 = CheckpointSource::open(files.f32);
  LoadStats stats;
  const LoadedWeights q = stream_load(device, f32, WeightFormat::int8_rowwise, 64 * KiB, stats);
  for (const TensorEntry& entry : f32.tensors()) {
    const Tensor& t = q.tensors.at(entry.name);
    if (entry.shape.size() == 1) {
      EXPECT_EQ(t.dtype(), DType::bf16) << entry.name;
      EXPECT_EQ(q.scales.count(entry.name), 0u);
      continue;
    }
    EXPECT_EQ(t.dtype(), DType::i8) << entry.name;
    const std::vector<float> scales = q.scales.at(entry.name).to_host_f32();
    ASSERT_EQ(static_cast<std::int64_t>(scales.size()), entry.shape[0]);
    const auto* x = reinterpret_cast<const float*>(f32.data(entry));
    for (std::int64_t r = 0; r < entry.shape[0]; r += 37) {
      float absmax = 0;
      for (std::int64_t c = 0; c < entry.shape[1]; ++c) absmax = std::max(absmax, std::fabs(x[r * entry.shape[1] + c]));
      EXPECT_EQ(scales[static_cast<std::size_t>(r)], absmax / 127.0f) << entry.name << " row " << r;
    }
  }
}

TEST(WeightLoader, ChunkSmallerThanARowIsAnErrorNamingTheTensor) {
  TinyFiles files;
  Device device = host_device();
  LoadStats stats;
  try {
    stream_load(device, CheckpointSource::open(files.f32), WeightFormat::bf16, 512, stats);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'model.embed_tokens.weight' has rows of 256"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(device.allocator().stats().allocated.current, 0);
}

TEST(WeightLoader, WholeFileLoadOfABf16FileUploadsItAndCopiesIntoTheSameBf16Bits) {
  // The state dict and the model both on the device: 2 + 2 bytes per parameter.
  TinyFiles files;
  Device device = host_device();
  LoadStats stats;
  const LoadedWeights from_f32 = load_whole_file_then_cast(device, CheckpointSource::open(files.f32), stats);
  const LoadedWeights from_bf16 = load_whole_file_then_cast(device, CheckpointSource::open(files.bf16), stats);
  EXPECT_EQ(weights_digest(from_bf16), weights_digest(from_f32));
  EXPECT_EQ(stats.file_bytes, static_cast<std::uint64_t>(safetensors::llama_preset("llama-tiny").parameters()) * 2);
}

TEST(WeightLoader, WholeFileLoadNeedsOneFloatDtype) {
  safetensors::testing::TempDir dir;
  Device device = host_device();
  LoadStats stats;
  const std::string ints = dir.file("ints.safetensors");
  testing::write_zero_checkpoint(ints, {{"w", DType::i32, {4, 4}, 0, 0}});
  EXPECT_THROW(load_whole_file_then_cast(device, CheckpointSource::open(ints), stats), std::invalid_argument);
  const std::string mixed = dir.file("mixed.safetensors");
  testing::write_zero_checkpoint(mixed, {{"w", DType::f32, {4, 4}, 0, 0}, {"n", DType::bf16, {4}, 0, 0}});
  EXPECT_THROW(load_whole_file_then_cast(device, CheckpointSource::open(mixed), stats), std::invalid_argument);
}

TEST(WeightLoader, PlanOnlySourceAllocatesWithoutData) {
  memory::AllocatorConfig config;
  config.budget = 1 * GiB;
  Device device(DeviceKind::dry, config);
  const auto& tiny = safetensors::llama_preset("llama-tiny");
  const CheckpointSource plan = CheckpointSource::plan("plan", safetensors::llama_layout(tiny, DType::f32));
  EXPECT_FALSE(plan.has_data());
  LoadStats stats;
  const LoadedWeights weights = stream_load(device, plan, WeightFormat::bf16, 256 * KiB, stats);
  EXPECT_EQ(weights.bytes(), static_cast<std::size_t>(tiny.parameters()) * 2);
  EXPECT_EQ(stats.file_bytes, plan.data_bytes());
}

TEST(WeightLoader, ZeroElementTensorsLoadAsEmptyTensorsWithoutDividingByZero) {
  // The scenario refuses such a file (not the model's), but the loaders must not divide by a
  // zero row length or row count on one: (4, 0) has rows of no elements, (0, 8) no rows.
  safetensors::testing::TempDir dir;
  const std::string path = dir.file("empty.safetensors");
  testing::write_zero_checkpoint(path, {{"cols0", DType::f32, {4, 0}, 0, 0},
                                        {"rows0", DType::f32, {0, 8}, 0, 0},
                                        {"none", DType::f32, {0}, 0, 0},
                                        {"w", DType::f32, {4, 8}, 0, 0}});
  const CheckpointSource source = CheckpointSource::open(path);
  Device device = host_device();
  LoadStats stats;
  for (WeightFormat format : {WeightFormat::bf16, WeightFormat::int8_rowwise}) {
    const LoadedWeights weights = stream_load(device, source, format, 1 * KiB, stats);
    EXPECT_EQ(weights.tensors.at("cols0").shape(), (Shape{4, 0}));
    EXPECT_EQ(weights.tensors.at("rows0").numel(), 0);
    EXPECT_EQ(weights.tensors.at("none").numel(), 0);
    EXPECT_EQ(bytes_of(weights.tensors.at("w")),
              std::vector<std::uint8_t>(4 * 8 * (format == WeightFormat::bf16 ? 2 : 1), 0));
    if (format == WeightFormat::int8_rowwise) {
      EXPECT_EQ(int8_error_over_bound(weights, source), 0.0);
    }
  }
  const LoadedWeights whole = load_whole_file_then_cast(device, source, stats);
  EXPECT_EQ(whole.tensors.at("rows0").shape(), (Shape{0, 8}));
}

}  // namespace
}  // namespace oomlab::scenarios::weights7b
