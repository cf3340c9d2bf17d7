// The pinned staging ring on host and dry: copies of any size, packed back to back and cut at
// slot edges, arrive intact; flush() means queued copies are done on host; an abandoned stager
// stops; bad settings and misuse are clear errors. Through the loader: every ring shape loads the
// same bytes and makes the same device allocations. (With real DMA: weights7b_gpu_test.)
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/testing/random_bytes.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/models/safetensors/tests/temp_dir.hpp"
#include "scenarios/weights7b/pinned_stager.hpp"
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

// Pieces as a checkpoint has them: tiny norms beside matrices larger than a slot.
const std::size_t kPieces[] = {7, 3 * 4096 + 5, 100, 1, 70'000, 4096, 9, 200'000, 33};

TEST(PinnedStager, PackedCopiesOfAnySizeArriveIntact) {
  Device device = make_device(DeviceKind::host);
  std::size_t total = 0;
  for (std::size_t n : kPieces) total += n;
  const std::vector<std::uint8_t> file = oomlab::testing::random_bytes(total, 3);
  for (const std::size_t slots : {2u, 3u}) {
    for (const std::size_t slot_bytes : {4096u + 3u, 64u * 1024u}) {
      // Scattered destinations, in reverse file order, so a copy into the wrong place shows.
      std::vector<std::uint8_t> out(total + 64, 0);
      PinnedStager stager(device, device.stream(), RingShape{slot_bytes, slots});
      std::size_t offset = 0;
      for (std::size_t n : kPieces) {
        stager.upload(out.data() + (total - offset - n), file.data() + offset, n);
        offset += n;
      }
      stager.finish();
      offset = 0;
      for (std::size_t n : kPieces) {
        ASSERT_EQ(std::memcmp(out.data() + (total - offset - n), file.data() + offset, n), 0)
            << "piece of " << n << " bytes, " << slots << " slots of " << slot_bytes;
        offset += n;
      }
      EXPECT_EQ(stager.host_staging_bytes(), slots * slot_bytes);
      EXPECT_GT(stager.times().host_copy, 0.0);
    }
  }
}

TEST(PinnedStager, FlushMeansQueuedCopiesAreIssued) {
  Device device = make_device(DeviceKind::host);  // where issued means done
  const std::vector<std::uint8_t> file = oomlab::testing::random_bytes(300'000, 4);
  std::vector<std::uint8_t> out(file.size(), 0);
  PinnedStager stager(device, device.stream(), RingShape{10'000, 2});
  stager.upload(out.data(), file.data(), 150'000);
  stager.upload(out.data() + 150'000, file.data() + 150'000, 150'000);
  stager.flush();
  EXPECT_EQ(out, file);
  stager.finish();
}

TEST(PinnedStager, AbandonedMidLoadStopsItsThread) {
  Device device = make_device(DeviceKind::host);
  const std::vector<std::uint8_t> file = oomlab::testing::random_bytes(1 << 20, 5);
  std::vector<std::uint8_t> out(file.size());
  {
    // As after an exception in the loader: destroyed with copies still queued, without finish().
    PinnedStager stager(device, device.stream(), RingShape{4096, 2});
    for (std::size_t offset = 0; offset < file.size(); offset += 4096) {
      stager.upload(out.data() + offset, file.data() + offset, 4096);
    }
  }
  SUCCEED();  // returned: no hang
}

TEST(PinnedStager, BadSettingsAndMisuseAreClearErrors) {
  Device device = make_device(DeviceKind::host);
  for (const RingShape bad : {RingShape{4096, 1}, RingShape{0, 2}}) {
    try {
      PinnedStager stager(device, device.stream(), bad);
      FAIL() << bad.slot_bytes << " x " << bad.slots;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("at least 2 slots"), std::string::npos) << e.what();
    }
  }
  PinnedStager stager(device, device.stream(), RingShape{4096, 2});
  stager.finish();
  std::uint8_t byte = 0;
  EXPECT_THROW(stager.upload(&byte, &byte, 1), std::logic_error);
}

class RingShapes : public ::testing::TestWithParam<DType> {};

TEST_P(RingShapes, LoadTheSameBytes) {
  safetensors::testing::TempDir dir;
  const std::string path = dir.file("tiny.safetensors");
  safetensors::generate_llama_checkpoint(path, safetensors::llama_preset("llama-tiny"), GetParam(), 5);
  const CheckpointSource source = CheckpointSource::open(path);
  Device device = make_device(DeviceKind::host);
  for (const WeightFormat format : {WeightFormat::bf16, WeightFormat::int8_rowwise}) {
    LoadStats reference_stats;
    const LoadedWeights reference = stream_load(device, source, format, 96 * KiB, reference_stats);
    EXPECT_EQ(reference_stats.host_staging_bytes, kDefaultRing.slots * kDefaultRing.slot_bytes);
    // Slots smaller than a chunk, and chunks of the device ring smaller than a slot.
    for (const RingShape ring : {RingShape{8 * KiB, 2}, RingShape{100 * KiB, 3}}) {
      LoadStats stats;
      const LoadedWeights weights = stream_load(device, source, format, 24 * KiB, stats, ring);
      for (const TensorEntry& entry : source.tensors()) {
        EXPECT_EQ(bytes_of(weights.tensors.at(entry.name)), bytes_of(reference.tensors.at(entry.name)))
            << entry.name << ", " << ring.slots << " slots of " << ring.slot_bytes;
        if (reference.scales.count(entry.name)) {
          EXPECT_EQ(bytes_of(weights.scales.at(entry.name)), bytes_of(reference.scales.at(entry.name))) << entry.name;
        }
      }
      EXPECT_EQ(stats.file_bytes, reference_stats.file_bytes);
      EXPECT_EQ(stats.host_staging_bytes, ring.slots * ring.slot_bytes);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(FileDtypes, RingShapes, ::testing::Values(DType::f32, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(RingShapes, MakeTheSameDeviceAllocationsOnDry) {
  const auto layout = safetensors::llama_layout(safetensors::llama_preset("llama-tiny"), DType::f32);
  const CheckpointSource plan = CheckpointSource::plan("plan", layout);
  std::vector<std::vector<std::size_t>> sizes;
  for (const RingShape ring : {RingShape{8 * KiB, 2}, RingShape{1 * MiB, 4}}) {
    Device device = make_device(DeviceKind::dry);
    LoadStats stats;
    stream_load(device, plan, WeightFormat::bf16, 96 * KiB, stats, ring);
    sizes.emplace_back();
    for (const auto& event : device.allocator().trace().events()) sizes.back().push_back(event.bytes);
  }
  EXPECT_FALSE(sizes[0].empty());
  EXPECT_EQ(sizes[0], sizes[1]);
}

}  // namespace
}  // namespace oomlab::scenarios::weights7b
