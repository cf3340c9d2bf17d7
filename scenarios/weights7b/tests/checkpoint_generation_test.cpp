// The generated checkpoints weights7b loads are the same bytes wherever they are made: the
// generator fills chunks on as many threads as the machine has, and every element must still
// be the seeded counter-based value at its own index. A pinned digest of the whole files catches
// any change of bytes (made with the single-threaded generator; the GPU machine has 16 cores).
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/core/dtype.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/models/safetensors/safetensors_reader.hpp"
#include "scenarios/models/safetensors/tests/temp_dir.hpp"

namespace oomlab::safetensors {
namespace {

std::uint64_t fnv1a(const std::uint8_t* data, std::uint64_t bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (std::uint64_t i = 0; i < bytes; ++i) hash = (hash ^ data[i]) * 0x100000001b3ull;
  return hash;
}

class GeneratedCheckpoint : public ::testing::TestWithParam<DType> {};

TEST_P(GeneratedCheckpoint, EveryElementIsItsSeededValueAndTheBytesArePinned) {
  const DType dtype = GetParam();
  testing::TempDir dir;
  const std::string path = dir.file("tiny.safetensors");
  generate_llama_checkpoint(path, llama_preset("llama-tiny"), dtype, 7);
  const SafetensorsFile file(path);
  const std::vector<TensorEntry>& tensors = file.header().tensors;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const TensorView view = file.tensor(tensors[t]);
    const bool norm = is_norm_weight(tensors[t]);
    for (std::int64_t i = 0; i < tensors[t].numel(); ++i) {
      const float value = llama_value(7, t, norm, static_cast<std::uint64_t>(i));
      if (dtype == DType::f32) {
        float got;
        std::memcpy(&got, view.data + 4 * i, 4);
        ASSERT_EQ(got, value) << tensors[t].name << "[" << i << "]";
      } else {
        std::uint16_t got;
        std::memcpy(&got, view.data + 2 * i, 2);
        ASSERT_EQ(got, float_to_bf16_bits(value)) << tensors[t].name << "[" << i << "]";
      }
    }
  }
  const std::uint8_t* first = file.tensor(tensors.front()).data;
  const std::uint64_t digest = fnv1a(first, file.header().data_bytes);
  EXPECT_EQ(digest, dtype == DType::f32 ? 4447817508961058983ull : 12564342050476961621ull) << std::hex << digest;
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GeneratedCheckpoint, ::testing::Values(DType::f32, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace oomlab::safetensors
