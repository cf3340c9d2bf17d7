// LLaMA layouts and the seeded generator.
#include <gtest/gtest.h>

#include <cmath>

#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/models/safetensors/safetensors_reader.hpp"
#include "scenarios/models/safetensors/tests/temp_dir.hpp"

namespace oomlab::safetensors {
namespace {

TEST(LlamaLayout, SevenBHasTheStoryParameterCountAndHfNames) {
  const LlamaShape& shape = llama_preset("llama-7b");
  EXPECT_EQ(shape.parameters(), 6738415616);
  const auto layout = llama_layout(shape, DType::f32);
  EXPECT_EQ(layout.size(), 2u + 32u * 9u + 1u);
  std::int64_t total = 0;
  for (const TensorEntry& entry : layout) total += entry.numel();
  EXPECT_EQ(total, shape.parameters());
  EXPECT_EQ(layout.back().end, static_cast<std::uint64_t>(shape.parameters()) * 4);
  EXPECT_EQ(layout.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(layout.front().shape, (Shape{32000, 4096}));
  EXPECT_EQ(layout[9].name, "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(layout[9].shape, (Shape{4096, 11008}));
  EXPECT_EQ(layout.back().name, "lm_head.weight");
}

TEST(LlamaLayout, UnknownPresetListsTheKnownOnes) {
  try {
    llama_preset("llama-70b");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("llama-7b, llama-small, llama-tiny"), std::string::npos);
  }
}

TEST(LlamaValues, DeterministicPerSeedNeverZeroAndInRange) {
  std::vector<float> a(1001), b(1001), c(1001);
  fill_llama_values(7, 3, false, DType::f32, 0, a.size(), a.data());
  fill_llama_values(7, 3, false, DType::f32, 0, b.size(), b.data());
  fill_llama_values(8, 3, false, DType::f32, 0, c.size(), c.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (float v : a) {
    EXPECT_NE(v, 0.0f);
    EXPECT_LE(std::fabs(v), 0.05f);
  }
  // A chunk starting mid-tensor (odd offset) matches the whole-tensor values.
  std::vector<float> tail(500);
  fill_llama_values(7, 3, false, DType::f32, 501, tail.size(), tail.data());
  EXPECT_EQ(tail, std::vector<float>(a.begin() + 501, a.end()));
  EXPECT_EQ(llama_value(7, 3, false, 777), a[777]);
  std::vector<float> norm(64);
  fill_llama_values(7, 1, true, DType::f32, 0, norm.size(), norm.data());
  for (float v : norm) EXPECT_NEAR(v, 1.0f, 0.1f);
}

TEST(LlamaCheckpoint, Bf16FileHoldsTheRoundedF32FileValues) {
  testing::TempDir dir;
  const LlamaShape& tiny = llama_preset("llama-tiny");
  generate_llama_checkpoint(dir.file("f32.safetensors"), tiny, DType::f32, 42);
  generate_llama_checkpoint(dir.file("bf16.safetensors"), tiny, DType::bf16, 42);
  SafetensorsFile f32(dir.file("f32.safetensors"));
  SafetensorsFile bf16(dir.file("bf16.safetensors"));
  EXPECT_EQ(f32.header().metadata.at("oomlab_preset"), "llama-tiny");
  EXPECT_EQ(f32.header().metadata.at("oomlab_seed"), "42");
  EXPECT_EQ(f32.header().data_bytes, static_cast<std::uint64_t>(tiny.parameters()) * 4);
  EXPECT_EQ(bf16.header().data_bytes, static_cast<std::uint64_t>(tiny.parameters()) * 2);
  for (const TensorEntry& entry : f32.header().tensors) {
    const TensorView wide = f32.tensor(entry.name);
    const TensorView narrow = bf16.tensor(entry.name);
    const auto* values = reinterpret_cast<const float*>(wide.data);
    const auto* bits = reinterpret_cast<const std::uint16_t*>(narrow.data);
    for (std::int64_t i = 0; i < entry.numel(); i += 97) {
      ASSERT_EQ(bits[i], float_to_bf16_bits(values[i])) << entry.name << "[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace oomlab::safetensors
