// A checkpoint split across shards (model.safetensors.index.json + model-0000N-of-0000M files)
// loads exactly as the single file does: tensor by tensor across files, bit-identical weights.
// A malformed index, or shards of another model, are one line of bad input before any run.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "harness/memory/size.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/weights7b/checkpoint_cache.hpp"
#include "scenarios/weights7b/tests/sharded_copy.hpp"
#include "scenarios/weights7b/tests/weights7b_test_support.hpp"
#include "scenarios/weights7b/weight_loader.hpp"
#include "scenarios/weights7b/weights7b.hpp"
#include "scenarios/weights7b/weights_check.hpp"

namespace oomlab::scenarios {
namespace {

using testing::expect_one_line_naming;
using testing::knob_error;
using testing::run_weights7b;
using testing::ShardingOptions;
using testing::write_sharded_copy;
using weights7b::CheckpointSource;
using weights7b::LoadedWeights;
using weights7b::LoadStats;
using weights7b::WeightFormat;

const safetensors::LlamaShape& tiny() { return safetensors::llama_preset("llama-tiny"); }

// The generated llama-tiny checkpoint the scenario itself would load (same seed), in its own
// directory, and a sharded copy of it in another.
struct TinyCheckpoint {
  explicit TinyCheckpoint(DType dtype = DType::f32, ShardingOptions options = {}) {
    safetensors::generate_llama_checkpoint(single, tiny(), dtype, weights7b::kCheckpointSeed);
    index = write_sharded_copy(single, shard_dir.path().string(), options);
  }
  safetensors::testing::TempDir single_dir, shard_dir;
  std::string single = single_dir.file("model.safetensors");
  std::string index;
};

Device host_device() {
  memory::AllocatorConfig config;
  config.budget = 1 * GiB;
  return Device(DeviceKind::host, config);
}

std::uint64_t digest_of(const CheckpointSource& source, WeightFormat format) {
  Device device = host_device();
  LoadStats stats;
  return weights7b::weights_digest(weights7b::stream_load(device, source, format, 64 * KiB, stats));
}

std::uint64_t whole_file_digest(const CheckpointSource& source) {
  Device device = host_device();
  LoadStats stats;
  return weights7b::weights_digest(weights7b::load_whole_file_then_cast(device, source, stats));
}

std::set<std::string> names(const CheckpointSource& source) {
  std::set<std::string> result;
  for (const auto& entry : source.tensors()) result.insert(entry.name);
  return result;
}

TEST(ShardedLoad, ThreeShardsHoldTheSingleFilesTensorsAndBytes) {
  TinyCheckpoint checkpoint;
  const CheckpointSource single = CheckpointSource::open(checkpoint.single);
  for (const std::string& path : {checkpoint.index, checkpoint.shard_dir.path().string()}) {
    const CheckpointSource sharded = CheckpointSource::open(path);
    EXPECT_EQ(sharded.label(), checkpoint.index);
    EXPECT_EQ(sharded.shard_count(), 3u);
    EXPECT_EQ(names(sharded), names(single));
    EXPECT_EQ(sharded.data_bytes(), single.data_bytes());
    for (const auto& entry : sharded.tensors()) {
      ASSERT_EQ(std::memcmp(sharded.data(entry), single.data(entry), entry.bytes()), 0) << entry.name;
    }
  }
}

TEST(ShardedLoad, EveryLoaderGivesTheSingleFilesBitsFromShards) {
  for (const DType dtype : {DType::f32, DType::bf16}) {
    TinyCheckpoint checkpoint(dtype);
    const CheckpointSource single = CheckpointSource::open(checkpoint.single);
    const CheckpointSource sharded = CheckpointSource::open(checkpoint.index);
    EXPECT_EQ(digest_of(sharded, WeightFormat::bf16), digest_of(single, WeightFormat::bf16)) << dtype_name(dtype);
    EXPECT_EQ(digest_of(sharded, WeightFormat::int8_rowwise), digest_of(single, WeightFormat::int8_rowwise))
        << dtype_name(dtype);
    EXPECT_EQ(whole_file_digest(sharded), whole_file_digest(single)) << dtype_name(dtype);
  }
}

TEST(ShardedLoad, HeadersAloneGiveTheSameDryPlanAsTheLayout) {
  // With shards in file order the tensors come in layout order: a dry run from the headers
  // allocates exactly what the plan from the preset's shapes does.
  ShardingOptions file_order;
  file_order.by_name = false;
  TinyCheckpoint checkpoint(DType::f32, file_order);
  const CheckpointSource headers = CheckpointSource::header_only(checkpoint.index);
  EXPECT_FALSE(headers.has_data());
  EXPECT_EQ(headers.shard_count(), 3u);
  const auto layout = safetensors::llama_layout(tiny(), DType::f32);
  ASSERT_EQ(headers.tensors().size(), layout.size());
  for (std::size_t i = 0; i < layout.size(); ++i) {
    EXPECT_EQ(headers.tensors()[i].name, layout[i].name);
    EXPECT_EQ(headers.tensors()[i].begin, layout[i].begin);
  }
  const auto planned = run_weights7b("fixed", DeviceKind::dry, Scale::tiny, "1GiB");
  testing::GivenCheckpoint given(DType::f32, checkpoint.index);
  const auto from_headers = run_weights7b("fixed", DeviceKind::dry, Scale::tiny, "1GiB");
  EXPECT_EQ(from_headers.stats.allocated.peak, planned.stats.allocated.peak);
  EXPECT_EQ(from_headers.events.size(), planned.events.size());
  EXPECT_EQ(from_headers.metrics.at("checkpoint_files"), 3.0);
}

TEST(ShardedLoad, TheScenarioLoadsAGivenShardedCheckpointBitForBit) {
  testing::CheckpointDir cache;  // the generated single file: same preset, dtype and seed
  TinyCheckpoint checkpoint;
  for (const char* variant : {"broken", "fixed", "fixed-int8"}) {
    const auto generated = run_weights7b(variant, DeviceKind::host, Scale::tiny, "1GiB");
    testing::GivenCheckpoint given(DType::f32, checkpoint.shard_dir.path().string());
    const auto from_shards = run_weights7b(variant, DeviceKind::host, Scale::tiny, "1GiB");
    ASSERT_FALSE(generated.oom || from_shards.oom) << variant;
    EXPECT_EQ(from_shards.metrics.at("checkpoint_files"), 3.0) << variant;
    EXPECT_EQ(from_shards.metrics.at("file_bytes"), generated.metrics.at("file_bytes")) << variant;
    EXPECT_EQ(from_shards.stats.allocated.peak, generated.stats.allocated.peak) << variant;
    const char* check = std::string(variant) == "fixed-int8" ? "int8_error_over_bound" : "weights_digest52";
    EXPECT_EQ(from_shards.metrics.at(check), generated.metrics.at(check)) << variant;
  }
}

TEST(ShardedLoad, RotaryTablesOfOlderHfFilesAreSkipped) {
  // meta-llama/Llama-2-*-hf shards hold model.layers.N.self_attn.rotary_emb.inv_freq (f32,
  // head_dim / 2) beside f16 weights; transformers recomputes them. They are no weights here either.
  ShardingOptions with_tables;
  for (int layer = 0; layer < 2; ++layer) {
    with_tables.extra.push_back({"model.layers." + std::to_string(layer) + ".self_attn.rotary_emb.inv_freq",
                                 DType::f32, {32}, std::vector<std::uint8_t>(32 * 4, 0)});
  }
  TinyCheckpoint checkpoint(DType::bf16, with_tables);
  EXPECT_EQ(CheckpointSource::open(checkpoint.index).tensors().size(), 2u + 2u * 9u + 1u + 2u);
  testing::GivenCheckpoint given(DType::bf16, checkpoint.index);
  EXPECT_EQ(knob_error("fixed-bf16-file", Scale::tiny), "(accepted)");
  const auto run = run_weights7b("fixed-bf16-file", DeviceKind::host, Scale::tiny, "1GiB");
  EXPECT_EQ(run.metrics.at("parameters"), static_cast<double>(tiny().parameters()));
  EXPECT_EQ(run.metrics.at("file_bytes"), static_cast<double>(tiny().parameters()) * 2);
}

TEST(ShardedLoad, AMalformedIndexIsOneLineOfBadInputBeforeAnyRun) {
  const std::pair<std::function<void(nlohmann::json&)>, std::string> cases[] = {
      {[](nlohmann::json& index) { index["weight_map"]["lm_head.weight"] = "../model-00003-of-00003.safetensors"; },
       "weight_map: tensor 'lm_head.weight' is in shard '../model-00003-of-00003.safetensors', which is not a file "
       "name"},
      {[](nlohmann::json& index) { index["weight_map"]["lm_head.weight"] = "/tmp/model-00003-of-00003.safetensors"; },
       "which is not a file name: shards sit beside the index"},
      {[](nlohmann::json& index) { index["weight_map"]["lm_head.weight"] = "model-00004-of-00004.safetensors"; },
       "shard 'model-00004-of-00004.safetensors' is missing (the weight_map puts 1 tensors in it)"},
      {[](nlohmann::json& index) { index["weight_map"]["lm_head.weight"] = "model-00001-of-00003.safetensors"; },
       "tensor 'lm_head.weight' is mapped to shard 'model-00001-of-00003.safetensors' but is in shard "
       "'model-00003-of-00003.safetensors'"},
      {[](nlohmann::json& index) { index["weight_map"]["model.extra.weight"] = "model-00001-of-00003.safetensors"; },
       "tensor 'model.extra.weight' is mapped to shard 'model-00001-of-00003.safetensors', which does not hold it"},
      {[](nlohmann::json& index) { index["weight_map"].erase("model.norm.weight"); },
       "holds tensor 'model.norm.weight', which the weight_map does not list"},
      {[](nlohmann::json& index) { index["metadata"]["total_size"] = 12; },
       "metadata.total_size is 12 bytes but the shards' 21 tensors hold"},
      {[](nlohmann::json& index) { index.erase("weight_map"); }, "the index has no weight_map"},
  };
  for (const auto& [edit, part] : cases) {
    ShardingOptions options;
    options.edit_index = edit;
    TinyCheckpoint checkpoint(DType::f32, options);
    testing::GivenCheckpoint given(DType::f32, checkpoint.index);
    for (const char* variant : {"broken", "fixed"}) {
      expect_one_line_naming(knob_error(variant, Scale::tiny),
                             {"OOMLAB_WEIGHTS7B_F32: " + checkpoint.index + ": ", part});
    }
  }
}

TEST(ShardedLoad, ShardsOfAnotherModelAreRefusedNamingBoth) {
  TinyCheckpoint checkpoint;
  testing::GivenCheckpoint given(DType::f32, checkpoint.index);
  EXPECT_EQ(knob_error("fixed", Scale::tiny), "(accepted)");
  expect_one_line_naming(knob_error("fixed", Scale::tiny, {{"model", "llama-small"}}),
                         {"OOMLAB_WEIGHTS7B_F32: " + checkpoint.index,
                          "the file is a llama-tiny f32 checkpoint; --set model=llama-small loads llama-small "
                          "(--set model=llama-tiny loads this file)"});
  // The f32 shards named as the f32 file, but the run asks for an f16 file: that variable is unset,
  // so a generated one would be used; named as the f16 file they are refused by dtype.
  EXPECT_EQ(knob_error("fixed", Scale::tiny, {{"dtype", "f16"}}), "(accepted)");
  testing::GivenCheckpoint as_f16(DType::f16, checkpoint.index);
  expect_one_line_naming(knob_error("fixed", Scale::tiny, {{"dtype", "f16"}}),
                         {"OOMLAB_WEIGHTS7B_F16: " + checkpoint.index,
                          "the file is a llama-tiny f32 checkpoint; OOMLAB_WEIGHTS7B_F16 is read as an f16 file "
                          "(an f32 one goes in OOMLAB_WEIGHTS7B_F32, read with --set dtype=f32)"});
}

}  // namespace
}  // namespace oomlab::scenarios
