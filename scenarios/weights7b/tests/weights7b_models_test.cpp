// weights7b with the models people load today (issue 34): a transformer preset with the LLaMA
// layout (llama-3-8b, mistral-7b) or a config.json, grouped-query attention's k_proj/v_proj sized
// by the KV heads; models of another layout refused in one line; a GQA checkpoint generated,
// streamed and run through the transformer on host.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "harness/memory/size.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/models/safetensors/tests/temp_dir.hpp"
#include "scenarios/models/transformer/model_choice.hpp"
#include "scenarios/weights7b/load_into_model.hpp"
#include "scenarios/weights7b/tests/weights7b_test_support.hpp"
#include "scenarios/weights7b/weights7b_knobs.hpp"

namespace oomlab::scenarios {
namespace {

using testing::knob_error;
using testing::run_weights7b;

// A tiny Llama 3-like config: 4 query heads over 2 KV heads of 32.
const char* const kTinyGqa = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 128,
  "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "vocab_size": 256, "max_position_embeddings": 64, "rope_theta": 500000.0, "torch_dtype": "bfloat16"})";

struct TinyGqaConfig {
  safetensors::testing::TempDir dir;
  std::string folder = dir.file("tiny-gqa");
  TinyGqaConfig() {
    std::filesystem::create_directories(folder);
    std::ofstream(folder + "/config.json") << kTinyGqa;
  }
};

TEST(Weights7bModels, ALlamaLayoutPresetIsItsConfigsShape) {
  const safetensors::LlamaShape llama3 = llama_shape_of("llama-3-8b");
  EXPECT_EQ(llama3.name, "llama-3-8b");
  EXPECT_EQ(llama3.kv_dim(), 1024);  // 8 KV heads of 128: k_proj and v_proj are (1024, 4096)
  EXPECT_EQ(llama3.parameters(), 8030261248);
  EXPECT_EQ(llama_shape_of("llama-7b").parameters(), 6738415616);  // weights7b's own preset first
  testing::CheckpointDir cache;
  const auto run = run_weights7b("fixed", DeviceKind::dry, Scale::full, "unlimited",
                                 {{"model", "mistral-7b"}, {"dtype", "bf16"}});
  ASSERT_FALSE(run.oom);
  EXPECT_EQ(run.metrics.at("parameters"), 7241732096.0);
  EXPECT_EQ(run.metrics.at("weights_bytes_per_parameter"), 2.0);
}

TEST(Weights7bModels, OtherLayoutsAreRefusedInOneLine) {
  EXPECT_EQ(knob_error("fixed", Scale::tiny, {{"model", "qwen2.5-7b"}}),
            "weights7b: knob model: qwen2.5-7b (Qwen2ForCausalLM) has q/k/v biases: weights7b generates and loads "
            "LLaMA-layout checkpoints");
  EXPECT_EQ(knob_error("fixed", Scale::tiny, {{"model", "gpt2-124m"}}),
            "weights7b: knob model: gpt2-124m (GPT2LMHeadModel) is GPT-2 style: weights7b generates and loads "
            "LLaMA-layout checkpoints");
  EXPECT_NE(knob_error("fixed", Scale::tiny, {{"model", "/no/such/config.json"}}).find("is neither a preset"),
            std::string::npos);
  EXPECT_EQ(knob_error("fixed", Scale::tiny, {{"model", "llama-65b"}}),
            "weights7b: knob model: model 'llama-65b' is not one of llama-tiny, llama-small, llama-7b, llama-13b, "
            "llama-70b, nor a LLaMA-layout transformer preset (llama-3-8b, mistral-7b: oomlab list --models) or a "
            "config.json (or its folder)");
}

TEST(Weights7bModels, AConfigPathLoadsOnHostUnderANameThatSaysItsSizes) {
  TinyGqaConfig config;
  testing::CheckpointDir cache;
  const safetensors::LlamaShape shape = llama_shape_of(config.folder);
  EXPECT_EQ(shape.name, "tiny-gqa-128x2x4x2x256x256");
  EXPECT_EQ(shape.kv_heads, 2);
  // The value a record keeps, and the load: a generated GQA checkpoint streamed in as bf16.
  EXPECT_EQ(model::recorded_model_choice(config.folder), config.folder + "/config.json#LlamaForCausalLM");
  const auto run = run_weights7b("fixed", DeviceKind::host, Scale::tiny, "unlimited", {{"model", config.folder}});
  ASSERT_FALSE(run.oom);
  EXPECT_EQ(run.metrics.at("parameters"), static_cast<double>(shape.parameters()));
  bool cached = false;
  for (const auto& entry : std::filesystem::directory_iterator(cache.dir().path())) {
    cached = cached || entry.path().filename().string().rfind("tiny-gqa-128x2x4x2x256x256-f32-", 0) == 0;
  }
  EXPECT_TRUE(cached);
}

TEST(Weights7bModels, AGqaCheckpointRunsThroughTheTransformer) {
  TinyGqaConfig config;
  const safetensors::LlamaShape shape = llama_shape_of(config.folder);
  safetensors::testing::TempDir dir;
  const std::string file = dir.file("gqa.safetensors");
  safetensors::generate_llama_checkpoint(file, shape, DType::bf16, 3);
  memory::AllocatorConfig allocator;
  allocator.budget = 1 * GiB;
  Device device(DeviceKind::host, allocator);
  weights7b::LoadStats stats;
  const weights7b::LoadedWeights weights = weights7b::stream_load(
      device, weights7b::CheckpointSource::open(file), weights7b::WeightFormat::bf16, 64 * KiB, stats);
  // k_proj and v_proj (64, 128) land in the fused projection's rows after q's 128.
  const std::vector<float> logits = weights7b::forward_logits(device, shape, weights, {1, 7, 200, 42});
  ASSERT_EQ(logits.size(), 4u * 256u);
  for (float logit : logits) ASSERT_TRUE(std::isfinite(logit));
}

}  // namespace
}  // namespace oomlab::scenarios
