// A checkpoint the user names (OOMLAB_WEIGHTS7B_F32 / _BF16 / _F16) is checked before any run
// (check_knobs: only there are the model and dtype known): malformed, not a regular file, or not
// the model and dtype the run loads is bad input, one line each.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <functional>
#include <string>

#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/models/safetensors/tests/file_image.hpp"
#include "scenarios/weights7b/tests/weights7b_test_support.hpp"
#include "scenarios/weights7b/weights7b.hpp"

namespace oomlab::scenarios {
namespace {

using safetensors::TensorEntry;
using testing::expect_one_line_naming;
using testing::GivenCheckpoint;
using testing::knob_error;
using testing::run_weights7b;
using testing::write_zero_checkpoint;

std::vector<TensorEntry> tiny_layout(DType dtype) {
  return safetensors::llama_layout(safetensors::llama_preset("llama-tiny"), dtype);
}

// The generated llama-tiny checkpoint in `dtype`, written into the test's directory.
std::string tiny_checkpoint(const testing::CheckpointDir& cache, DType dtype) {
  const std::string path = cache.dir().file(std::string("tiny-") + dtype_name(dtype) + ".safetensors");
  safetensors::generate_llama_checkpoint(path, safetensors::llama_preset("llama-tiny"), dtype, 1);
  return path;
}

// check_knobs' message for the tiny f32 variant `fixed` given the llama-tiny f32 layout after
// `edit`, written as a file of zeros.
std::string error_for_edited_tiny_layout(const std::function<void(std::vector<TensorEntry>&)>& edit) {
  testing::CheckpointDir cache;
  const std::string path = cache.dir().file("edited.safetensors");
  std::vector<TensorEntry> layout = tiny_layout(DType::f32);
  edit(layout);
  write_zero_checkpoint(path, layout);
  GivenCheckpoint given(DType::f32, path);
  return knob_error("fixed", Scale::tiny);
}

TEST(GivenCheckpoint, NoneGivenChecksNothing) {
  testing::CheckpointDir cache;
  for (Scale scale : {Scale::tiny, Scale::full}) EXPECT_EQ(knob_error("broken", scale), "(accepted)");
}

TEST(GivenCheckpoint, TheScalesOwnCheckpointIsAccepted) {
  testing::CheckpointDir cache;
  GivenCheckpoint given_f32(DType::f32, tiny_checkpoint(cache, DType::f32));
  GivenCheckpoint given_bf16(DType::bf16, tiny_checkpoint(cache, DType::bf16));
  for (const char* variant : {"broken", "fixed", "fixed-int8", "fixed-bf16-file"}) {
    EXPECT_EQ(knob_error(variant, Scale::tiny), "(accepted)") << variant;
  }
  // The bf16 file serves every variant asked to read a bf16 file.
  for (const char* variant : {"broken", "fixed", "fixed-int8"}) {
    EXPECT_EQ(knob_error(variant, Scale::tiny, {{"dtype", "bf16"}}), "(accepted)") << variant;
  }
}

TEST(GivenCheckpoint, ATwoByTwoFileIsNotTheModel) {
  testing::CheckpointDir cache;
  const std::string path = cache.dir().file("x.safetensors");
  write_zero_checkpoint(path, {{"w", DType::f32, {2, 2}, 0, 0}});
  GivenCheckpoint given(DType::f32, path);
  expect_one_line_naming(knob_error("broken", Scale::full),
                         {"OOMLAB_WEIGHTS7B_F32: " + path, "tensor 'w' f32 (2, 2) is not in the llama-7b f32 layout"});
  // The run itself refuses it too (a scenario run without the CLI's check): never a load of it.
  EXPECT_THROW(run_weights7b("fixed", DeviceKind::dry, Scale::full, "rtx4090"), std::invalid_argument);
}

TEST(GivenCheckpoint, AWrongShapeNamesTheTensorAndBothShapes) {
  const std::string message = error_for_edited_tiny_layout([](std::vector<TensorEntry>& layout) {
    layout.back().shape = {2047, 256};  // lm_head one row short
  });
  expect_one_line_naming(message, {"tensor 'lm_head.weight' is f32 (2047, 256)",
                                   "llama-tiny f32 layout has f32 (2048, 256)"});
}

TEST(GivenCheckpoint, AMissingTensorIsNamed) {
  const std::string message = error_for_edited_tiny_layout([](std::vector<TensorEntry>& layout) {
    layout.erase(layout.begin() + 3);
  });
  expect_one_line_naming(message, {"tensor 'model.layers.0.self_attn.k_proj.weight' (f32 (256, 256)) of the "
                                   "llama-tiny f32 layout is missing"});
}

TEST(GivenCheckpoint, AnExtraTensorIsNamed) {
  const std::string message = error_for_edited_tiny_layout([](std::vector<TensorEntry>& layout) {
    layout.push_back({"model.layers.0.mlp.bias", DType::f32, {688}, 0, 0});
  });
  expect_one_line_naming(message, {"tensor 'model.layers.0.mlp.bias' f32 (688) is not in the llama-tiny f32 layout"});
}

TEST(GivenCheckpoint, RotaryTablesAreSkippedOnlyInTheirOwnShape) {
  // Older Hugging Face LLaMA files (every meta-llama/Llama-2-*-hf) carry each layer's rotary
  // table, head_dim / 2 floats, recomputed by every loader: accepted and not loaded. In another
  // shape it is no rotary table of this model.
  const std::string own_shape = error_for_edited_tiny_layout([](std::vector<TensorEntry>& layout) {
    layout.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", DType::f32, {32}, 0, 0});
    layout.push_back({"model.layers.1.self_attn.rotary_emb.inv_freq", DType::f32, {32}, 0, 0});
  });
  EXPECT_EQ(own_shape, "(accepted)");
  const std::string other_shape = error_for_edited_tiny_layout([](std::vector<TensorEntry>& layout) {
    layout.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", DType::f32, {64}, 0, 0});
  });
  expect_one_line_naming(other_shape, {"tensor 'model.layers.0.self_attn.rotary_emb.inv_freq' f32 (64) is not in "
                                       "the llama-tiny f32 layout"});
}

TEST(GivenCheckpoint, ZeroElementTensorsAreNotTheModel) {
  const std::string message = error_for_edited_tiny_layout([](std::vector<TensorEntry>& layout) {
    layout.front().shape = {0, 256};
  });
  expect_one_line_naming(message, {"tensor 'model.embed_tokens.weight' is f32 (0, 256)", "has f32 (2048, 256)"});
  // A file of nothing but zero-element tensors is no model either (and no run divides by its
  // zero parameters).
  const std::string only_empty = error_for_edited_tiny_layout([](std::vector<TensorEntry>& layout) {
    layout = {{"empty", DType::f32, {0}, 0, 0}, {"none", DType::f32, {4, 0}, 0, 0}};
  });
  expect_one_line_naming(only_empty, {"tensor 'empty' f32 (0) is not in the llama-tiny f32 layout"});
}

TEST(GivenCheckpoint, AnotherPresetIsRefusedNamingBothAndHowToLoadIt) {
  testing::CheckpointDir cache;
  GivenCheckpoint given(DType::f32, tiny_checkpoint(cache, DType::f32));
  // The scale chose the preset: another scale, or --set model=, loads the file.
  expect_one_line_naming(knob_error("broken", Scale::full),
                         {"the file is a llama-tiny f32 checkpoint; --scale full loads llama-7b "
                          "(--scale tiny or --set model=llama-tiny loads this file)"});
  EXPECT_EQ(knob_error("broken", Scale::tiny), "(accepted)");
  // --set model= chose it: no scale helps.
  expect_one_line_naming(knob_error("fixed", Scale::tiny, {{"model", "llama-13b"}}),
                         {"OOMLAB_WEIGHTS7B_F32: ", "the file is a llama-tiny f32 checkpoint; --set model=llama-13b "
                          "loads llama-13b (--set model=llama-tiny loads this file)"});
  EXPECT_EQ(knob_error("fixed", Scale::full, {{"model", "llama-tiny"}}), "(accepted)");
}

TEST(GivenCheckpoint, ABf16FileGivenAsF32IsRefused) {
  testing::CheckpointDir cache;
  GivenCheckpoint given(DType::f32, tiny_checkpoint(cache, DType::bf16));
  expect_one_line_naming(knob_error("fixed", Scale::tiny),
                         {"the file is a llama-tiny bf16 checkpoint; OOMLAB_WEIGHTS7B_F32 is read as an f32 file "
                          "(a bf16 one goes in OOMLAB_WEIGHTS7B_BF16, read with --set dtype=bf16)"});
  // The bf16 variant reads OOMLAB_WEIGHTS7B_BF16, which is not set: nothing to check.
  EXPECT_EQ(knob_error("fixed-bf16-file", Scale::tiny), "(accepted)");
}

TEST(GivenCheckpoint, AnF16FileIsReadFromItsOwnVariable) {
  testing::CheckpointDir cache;
  GivenCheckpoint given(DType::f16, tiny_checkpoint(cache, DType::f16));
  EXPECT_EQ(knob_error("fixed", Scale::tiny, {{"dtype", "f16"}}), "(accepted)");
  EXPECT_EQ(knob_error("fixed", Scale::tiny), "(accepted)");  // f32: OOMLAB_WEIGHTS7B_F32 unset
  const auto run = run_weights7b("fixed", DeviceKind::host, Scale::tiny, "1GiB", {{"dtype", "f16"}});
  ASSERT_FALSE(run.oom);
  EXPECT_EQ(run.metrics.at("file_bytes"),
            static_cast<double>(safetensors::llama_preset("llama-tiny").parameters()) * 2);
}

TEST(GivenCheckpoint, MalformedOrSpecialFilesAreBadInputNotRunErrors) {
  testing::CheckpointDir cache;
  const std::string deep = cache.dir().file("deep.safetensors");
  safetensors::testing::write_file_image(deep, R"({"w":{"dtype":"F32","shape":)" + std::string(100000, '[') +
                                                  std::string(100000, ']') + R"(,"data_offsets":[0,0]}})");
  const std::string fifo = cache.dir().file("fifo.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string truncated = tiny_checkpoint(cache, DType::f32);
  ASSERT_EQ(::truncate(truncated.c_str(), 4000), 0);  // past the 2 KB header, inside the data

  const std::pair<std::string, std::string> cases[] = {
      {deep, "nested deeper than 64"},
      {fifo, "a FIFO, not a regular file"},
      {truncated, "file truncated?"},
      {cache.dir().file("absent.safetensors"), "No such file"},
  };
  for (const auto& [path, part] : cases) {
    GivenCheckpoint given(DType::f32, path);
    expect_one_line_naming(knob_error("fixed", Scale::tiny), {"OOMLAB_WEIGHTS7B_F32: " + path, part});
  }
}

}  // namespace
}  // namespace oomlab::scenarios
