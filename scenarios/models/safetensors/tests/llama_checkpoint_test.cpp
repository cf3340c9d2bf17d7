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

// Hugging Face's meta-llama/Llama-2-13b-hf and -70b-hf (config.json): the counts are the
// models' published sizes, and 70B's index total_size is 2 x 68,976,648,192 + 80 x 64 x 4.
TEST(LlamaLayout, ThirteenBAndSeventyBHaveTheirParameterCountsAndHfShapes) {
  const LlamaShape& b13 = llama_preset("llama-13b");
  EXPECT_EQ(b13.parameters(), 13015864320);
  const auto layout13 = llama_layout(b13, DType::bf16);
  EXPECT_EQ(layout13.size(), 2u + 40u * 9u + 1u);
  EXPECT_EQ(layout13.back().end, static_cast<std::uint64_t>(b13.parameters()) * 2);
  EXPECT_EQ(layout13[3].name, "model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(layout13[3].shape, (Shape{5120, 5120}));
  EXPECT_EQ(layout13[7].shape, (Shape{13824, 5120}));  // gate_proj

  const LlamaShape& b70 = llama_preset("llama-70b");
  EXPECT_EQ(b70.parameters(), 68976648192);
  EXPECT_EQ(b70.head_dim(), 128);
  EXPECT_EQ(b70.kv_dim(), 1024);  // grouped-query attention: 8 key/value heads of 64 query heads
  const auto layout70 = llama_layout(b70, DType::f32);
  EXPECT_EQ(layout70.size(), 2u + 80u * 9u + 1u);
  std::int64_t total = 0;
  for (const TensorEntry& entry : layout70) total += entry.numel();
  EXPECT_EQ(total, b70.parameters());
  EXPECT_EQ(layout70[2].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(layout70[2].shape, (Shape{8192, 8192}));
  EXPECT_EQ(layout70[3].name, "model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(layout70[3].shape, (Shape{1024, 8192}));
  EXPECT_EQ(layout70[4].name, "model.layers.0.self_attn.v_proj.weight");
  EXPECT_EQ(layout70[4].shape, (Shape{1024, 8192}));
  EXPECT_EQ(layout70[5].shape, (Shape{8192, 8192}));  // o_proj
  EXPECT_EQ(layout70[9].name, "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(layout70[9].shape, (Shape{8192, 28672}));
  EXPECT_EQ(layout70.back().shape, (Shape{32000, 8192}));
}

TEST(LlamaLayout, UnknownPresetListsTheKnownOnes) {
  try {
    llama_preset("llama-65b");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("llama-tiny, llama-small, llama-7b, llama-13b, llama-70b"), std::string::npos)
        << e.what();
  }
}

TEST(LlamaLayout, RotaryTablesOfOlderHfFilesAreRecognised) {
  const LlamaShape& b7 = llama_preset("llama-7b");  // head_dim 128: 64 frequencies
  const auto table = [](std::string name, Shape shape, DType dtype = DType::f32) {
    return TensorEntry{std::move(name), dtype, std::move(shape), 0, 0};
  };
  EXPECT_TRUE(is_llama_rotary_table(table("model.layers.0.self_attn.rotary_emb.inv_freq", {64}), b7));
  EXPECT_TRUE(is_llama_rotary_table(table("model.layers.31.self_attn.rotary_emb.inv_freq", {64}, DType::f16), b7));
  EXPECT_FALSE(is_llama_rotary_table(table("model.layers.32.self_attn.rotary_emb.inv_freq", {64}), b7));
  EXPECT_FALSE(is_llama_rotary_table(table("model.layers.01.self_attn.rotary_emb.inv_freq", {64}), b7));
  EXPECT_FALSE(is_llama_rotary_table(table("model.layers.x.self_attn.rotary_emb.inv_freq", {64}), b7));
  EXPECT_FALSE(is_llama_rotary_table(table("model.layers.0.self_attn.rotary_emb.inv_freq", {128}), b7));
  EXPECT_FALSE(is_llama_rotary_table(table("model.layers.0.self_attn.rotary_emb.inv_freq", {64}, DType::i32), b7));
  EXPECT_FALSE(is_llama_rotary_table(table("model.layers..self_attn.rotary_emb.inv_freq", {64}), b7));
  EXPECT_FALSE(
      is_llama_rotary_table(table("model.layers.99999999999999999999.self_attn.rotary_emb.inv_freq", {64}), b7));
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

TEST(LlamaCheckpoint, Bf16AndF16FilesHoldTheRoundedF32FileValues) {
  testing::TempDir dir;
  const LlamaShape& tiny = llama_preset("llama-tiny");
  generate_llama_checkpoint(dir.file("f32.safetensors"), tiny, DType::f32, 42);
  SafetensorsFile f32(dir.file("f32.safetensors"));
  EXPECT_EQ(f32.header().metadata.at("oomlab_preset"), "llama-tiny");
  EXPECT_EQ(f32.header().metadata.at("oomlab_seed"), "42");
  EXPECT_EQ(f32.header().data_bytes, static_cast<std::uint64_t>(tiny.parameters()) * 4);
  for (const DType half : {DType::bf16, DType::f16}) {
    const std::string path = dir.file(std::string(dtype_name(half)) + ".safetensors");
    generate_llama_checkpoint(path, tiny, half, 42);
    SafetensorsFile narrow(path);
    EXPECT_EQ(narrow.header().metadata.at("oomlab_dtype"), dtype_name(half));
    EXPECT_EQ(narrow.header().data_bytes, static_cast<std::uint64_t>(tiny.parameters()) * 2);
    for (const TensorEntry& entry : f32.header().tensors) {
      const auto* values = reinterpret_cast<const float*>(f32.tensor(entry.name).data);
      const auto* bits = reinterpret_cast<const std::uint16_t*>(narrow.tensor(entry.name).data);
      for (std::int64_t i = 0; i < entry.numel(); i += 97) {
        const std::uint16_t rounded =
            half == DType::bf16 ? float_to_bf16_bits(values[i]) : float_to_f16_bits(values[i]);
        ASSERT_EQ(bits[i], rounded) << dtype_name(half) << " " << entry.name << "[" << i << "]";
      }
    }
  }
}

}  // namespace
}  // namespace oomlab::safetensors
