// The loader's two host paths on host and dry: registered windows load exactly what the staged
// copy loads (chunks cut at window boundaries, windows released behind the copies), make the
// same device allocations, and refuse bad settings clearly. (On a GPU: weights7b_gpu_test.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/testing/random_bytes.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/models/safetensors/tests/temp_dir.hpp"
#include "scenarios/weights7b/host_path.hpp"
#include "scenarios/weights7b/weight_loader.hpp"

namespace oomlab::scenarios::weights7b {
namespace {

Device make_device(DeviceKind kind) {
  memory::AllocatorConfig config;
  config.budget = 1 * GiB;
  return Device(kind, config);
}

std::vector<std::uint8_t> bytes_of(const Tensor& t) {
  std::vector<std::uint8_t> bytes(t.nbytes());
  t.copy_to_host(bytes.data(), bytes.size());
  return bytes;
}

// 64 KiB windows against 96 KiB chunks: most chunks straddle a window boundary.
HostPathConfig small_windows(std::size_t ahead) {
  return HostPathConfig{HostPath::registered_windows, 64 * KiB, ahead};
}

class HostPathLoad : public ::testing::TestWithParam<DType> {};

TEST_P(HostPathLoad, RegisteredWindowsLoadTheSameBytesAsTheStagedCopy) {
  safetensors::testing::TempDir dir;
  const std::string path = dir.file("tiny.safetensors");
  safetensors::generate_llama_checkpoint(path, safetensors::llama_preset("llama-tiny"), GetParam(), 5);
  const CheckpointSource source = CheckpointSource::open(path);
  Device device = make_device(DeviceKind::host);
  for (const WeightFormat format : {WeightFormat::bf16, WeightFormat::int8_rowwise}) {
    LoadStats staged_stats;
    const LoadedWeights staged = stream_load(device, source, format, 96 * KiB, staged_stats,
                                             HostPathConfig{HostPath::staged_copy});
    for (const std::size_t ahead : {1u, 3u}) {
      LoadStats stats;
      const LoadedWeights windows = stream_load(device, source, format, 96 * KiB, stats, small_windows(ahead));
      for (const TensorEntry& entry : source.tensors()) {
        EXPECT_EQ(bytes_of(windows.tensors.at(entry.name)), bytes_of(staged.tensors.at(entry.name)))
            << entry.name << " ahead " << ahead;
        if (staged.scales.count(entry.name)) {
          EXPECT_EQ(bytes_of(windows.scales.at(entry.name)), bytes_of(staged.scales.at(entry.name))) << entry.name;
        }
      }
      EXPECT_EQ(stats.host_path, HostPath::registered_windows);
      EXPECT_EQ(stats.host_staging_bytes, 0u);
      EXPECT_EQ(stats.registered_bytes, ahead * 64 * KiB);
      EXPECT_EQ(stats.host_copy_seconds, 0.0);
      EXPECT_EQ(stats.chunks, staged_stats.chunks);
      EXPECT_EQ(stats.file_bytes, staged_stats.file_bytes);
    }
    EXPECT_EQ(staged_stats.host_path, HostPath::staged_copy);
    EXPECT_EQ(staged_stats.host_staging_bytes, 2 * 96 * KiB);
  }
}

INSTANTIATE_TEST_SUITE_P(FileDtypes, HostPathLoad, ::testing::Values(DType::f32, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(HostPath, BothPathsMakeTheSameDeviceAllocationsOnDry) {
  const auto layout = safetensors::llama_layout(safetensors::llama_preset("llama-tiny"), DType::f32);
  const CheckpointSource plan = CheckpointSource::plan("plan", layout);
  std::vector<std::vector<std::size_t>> sizes;
  for (const HostPathConfig config : {HostPathConfig{HostPath::staged_copy}, small_windows(2)}) {
    Device device = make_device(DeviceKind::dry);
    LoadStats stats;
    stream_load(device, plan, WeightFormat::bf16, 96 * KiB, stats, config);
    sizes.emplace_back();
    for (const auto& event : device.allocator().trace().events()) sizes.back().push_back(event.bytes);
    EXPECT_EQ(stats.registered_bytes, 0u);  // no mapping, no windows
  }
  EXPECT_FALSE(sizes[0].empty());
  EXPECT_EQ(sizes[0], sizes[1]);
}

// A page-aligned block of random bytes standing in for a mapped file.
struct AlignedBytes {
  explicit AlignedBytes(std::size_t bytes)
      : data(static_cast<std::uint8_t*>(std::aligned_alloc(4096, bytes))), bytes(bytes) {
    const std::vector<std::uint8_t> random = oomlab::testing::random_bytes(bytes, 3);
    std::memcpy(data, random.data(), bytes);
  }
  ~AlignedBytes() { std::free(data); }
  std::uint8_t* data;
  std::size_t bytes;
};

TEST(HostPath, UploaderCutsChunksAtWindowsAndNeedsFileOrder) {
  Device device = make_device(DeviceKind::host);
  AlignedBytes file(256 * KiB);
  std::vector<std::uint8_t> out(file.bytes, 0);
  {
    auto uploader = make_chunk_uploader(device, device.stream(), small_windows(2), 96 * KiB, file.data + 100,
                                        file.data + file.bytes);
    // Pieces of odd sizes, each crossing at most one of the 64 KiB window boundaries.
    for (std::size_t offset = 100; offset < file.bytes;) {
      const std::size_t n = std::min<std::size_t>(50'000, file.bytes - offset);
      uploader->upload(out.data() + offset, file.data + offset, n);
      offset += n;
    }
    EXPECT_THROW(uploader->upload(out.data(), file.data + 100, 10), std::logic_error);
    uploader->finish();
  }
  EXPECT_EQ(std::memcmp(out.data() + 100, file.data + 100, file.bytes - 100), 0);
}

TEST(HostPath, UploaderAbandonedMidLoadStopsItsThreads) {
  Device device = make_device(DeviceKind::host);
  AlignedBytes file(512 * KiB);
  std::vector<std::uint8_t> out(file.bytes);
  // As after an exception in the loader: destroyed after one chunk, without finish().
  auto uploader = make_chunk_uploader(device, device.stream(), small_windows(1), 96 * KiB, file.data,
                                      file.data + file.bytes);
  uploader->upload(out.data(), file.data, 96 * KiB);
  uploader.reset();  // must return (no hang), windows released
  SUCCEED();
}

TEST(HostPath, BadWindowSettingsAreClearErrors) {
  Device device = make_device(DeviceKind::host);
  AlignedBytes file(64 * KiB);
  for (const HostPathConfig bad : {HostPathConfig{HostPath::registered_windows, 5000, 2},
                                   HostPathConfig{HostPath::registered_windows, 0, 2},
                                   HostPathConfig{HostPath::registered_windows, 64 * KiB, 0}}) {
    try {
      make_chunk_uploader(device, device.stream(), bad, 96 * KiB, file.data, file.data + file.bytes);
      FAIL() << bad.window_bytes << " " << bad.windows_ahead;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("multiple of 4 KiB"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace oomlab::scenarios::weights7b
