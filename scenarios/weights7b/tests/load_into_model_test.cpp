// The forward check after loading, on host with the tiny checkpoint: the three bf16 loads give
// bit-identical logits, each checkpoint tensor lands in its slice of the stacked parameters, and
// a weight set that does not fit the model is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "harness/memory/size.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/models/safetensors/tests/temp_dir.hpp"
#include "scenarios/weights7b/load_into_model.hpp"

namespace oomlab::scenarios::weights7b {
namespace {

constexpr std::uint64_t kSeed = 5;
const std::vector<std::int32_t> kPrompt = {1, 17, 503, 2047, 42, 0, 1999, 256};

const safetensors::LlamaShape& tiny() { return safetensors::llama_preset("llama-tiny"); }

Device host_device() {
  memory::AllocatorConfig config;
  config.budget = 1 * GiB;
  return Device(DeviceKind::host, config);
}

struct TinyCheckpoints {
  safetensors::testing::TempDir dir;
  std::string f32 = dir.file("f32.safetensors");
  std::string bf16 = dir.file("bf16.safetensors");
  TinyCheckpoints() {
    safetensors::generate_llama_checkpoint(f32, tiny(), DType::f32, kSeed);
    safetensors::generate_llama_checkpoint(bf16, tiny(), DType::bf16, kSeed);
  }
};

LoadedWeights load_fixed(Device& device, const std::string& path) {
  LoadStats stats;
  return stream_load(device, CheckpointSource::open(path), WeightFormat::bf16, 64 * KiB, stats);
}

std::vector<std::uint8_t> bytes_of(const Tensor& t) {
  std::vector<std::uint8_t> bytes(t.nbytes());
  t.copy_to_host(bytes.data(), bytes.size());
  return bytes;
}

// Runs `action`, expecting std::invalid_argument whose message contains `fragment`.
template <class Action>
void expect_refused(Action action, const std::string& fragment) {
  try {
    action();
    ADD_FAILURE() << "no error; expected one mentioning '" << fragment << "'";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

TEST(LoadIntoModel, LogitsAreBitIdenticalForBrokenFixedAndBf16FileLoads) {
  TinyCheckpoints files;
  Device device = host_device();
  LoadStats stats;
  const LoadedWeights broken = load_whole_file_then_cast(device, CheckpointSource::open(files.f32), stats);
  const LoadedWeights fixed = load_fixed(device, files.f32);
  const LoadedWeights from_bf16 = load_fixed(device, files.bf16);

  const std::vector<float> expected = forward_logits(device, tiny(), broken, kPrompt);
  ASSERT_EQ(expected.size(), kPrompt.size() * static_cast<std::size_t>(tiny().vocab));
  float lowest = expected[0], highest = expected[0];
  for (float v : expected) {
    ASSERT_TRUE(std::isfinite(v));
    lowest = std::min(lowest, v);
    highest = std::max(highest, v);
  }
  EXPECT_LT(lowest, highest);  // real logits, not a constant
  for (const auto* weights : {&fixed, &from_bf16}) {
    const std::vector<float> logits = forward_logits(device, tiny(), *weights, kPrompt);
    ASSERT_EQ(logits.size(), expected.size());
    EXPECT_EQ(std::memcmp(logits.data(), expected.data(), expected.size() * sizeof(float)), 0);
  }
}

TEST(LoadIntoModel, LogitsFollowTheWeights) {
  TinyCheckpoints files;
  Device device = host_device();
  const LoadedWeights weights = load_fixed(device, files.bf16);
  LoadedWeights changed = weights;
  const std::string name = "model.layers.1.mlp.down_proj.weight";
  Tensor replaced = Tensor::empty(device, changed.tensors.at(name).shape(), DType::bf16);
  replaced.copy_from(changed.tensors.at(name));
  replaced.fill(0.01);
  changed.tensors[name] = replaced;
  const std::vector<float> before = forward_logits(device, tiny(), weights, kPrompt);
  const std::vector<float> after = forward_logits(device, tiny(), changed, kPrompt);
  EXPECT_NE(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)), 0);
}

TEST(LoadIntoModel, EachCheckpointTensorLandsInItsStackedSlice) {
  TinyCheckpoints files;
  Device device = host_device();
  const LoadedWeights weights = load_fixed(device, files.bf16);
  model::TrainOptions options;
  options.precision = model::Precision::bf16;
  model::Transformer transformer(device, transformer_config_for(tiny(), 8), options, 3);
  copy_weights_into(transformer, weights);

  // Byte offsets into the stacked tensors, computed here from the documented layouts.
  const std::size_t C = static_cast<std::size_t>(tiny().hidden), F = static_cast<std::size_t>(tiny().ffn);
  const auto qkv = bytes_of(transformer.params().qkv_w);  // (L, 3C, C): q, k, v rows per layer
  const auto up = bytes_of(transformer.params().up_w);    // (L, F, C)
  const auto ln2 = bytes_of(transformer.params().ln2_w);  // (L, C)
  auto expect_at = [&](const std::vector<std::uint8_t>& stacked, std::size_t offset, const std::string& name) {
    const auto source = bytes_of(weights.tensors.at(name));
    ASSERT_LE(offset + source.size(), stacked.size()) << name;
    EXPECT_EQ(std::memcmp(stacked.data() + offset, source.data(), source.size()), 0) << name;
  };
  for (std::size_t l = 0; l < static_cast<std::size_t>(tiny().layers); ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    expect_at(qkv, (l * 3 * C * C + 0 * C * C) * 2, p + "self_attn.q_proj.weight");
    expect_at(qkv, (l * 3 * C * C + 1 * C * C) * 2, p + "self_attn.k_proj.weight");
    expect_at(qkv, (l * 3 * C * C + 2 * C * C) * 2, p + "self_attn.v_proj.weight");
    expect_at(up, l * F * C * 2, p + "mlp.up_proj.weight");
    expect_at(ln2, l * C * 2, p + "post_attention_layernorm.weight");
  }
  EXPECT_EQ(bytes_of(transformer.params().lm_head), bytes_of(weights.tensors.at("lm_head.weight")));
  EXPECT_EQ(bytes_of(transformer.params().wte), bytes_of(weights.tensors.at("model.embed_tokens.weight")));
}

TEST(LoadIntoModel, RefusesMissingExtraMisshapedOrInt8WeightsByName) {
  TinyCheckpoints files;
  Device device = host_device();
  const LoadedWeights weights = load_fixed(device, files.bf16);
  const std::string k1 = "model.layers.1.self_attn.k_proj.weight";

  LoadedWeights missing = weights;
  missing.tensors.erase(k1);
  expect_refused([&] { forward_logits(device, tiny(), missing, kPrompt); }, "'" + k1 + "' is missing");

  LoadedWeights extra = weights;
  extra.tensors["model.layers.2.input_layernorm.weight"] = weights.tensors.at("model.norm.weight");
  expect_refused([&] { forward_logits(device, tiny(), extra, kPrompt); },
                 "'model.layers.2.input_layernorm.weight'");

  LoadedWeights misshaped = weights;
  misshaped.tensors[k1] = weights.tensors.at("model.layers.1.mlp.up_proj.weight");
  expect_refused([&] { forward_logits(device, tiny(), misshaped, kPrompt); }, "'" + k1 + "' has shape");

  LoadStats stats;
  const LoadedWeights int8 = stream_load(device, CheckpointSource::open(files.f32),
                                         WeightFormat::int8_rowwise, 64 * KiB, stats);
  expect_refused([&] { forward_logits(device, tiny(), int8, kPrompt); }, "int8");

  expect_refused([&] { forward_logits(device, tiny(), weights, {1, 2048}); }, "token 2048");
  expect_refused([&] { forward_logits(device, tiny(), weights, {}); }, "empty");
}

}  // namespace
}  // namespace oomlab::scenarios::weights7b
