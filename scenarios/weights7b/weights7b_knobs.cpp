#include "scenarios/weights7b/weights7b_knobs.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>

#include "harness/memory/size.hpp"
#include "harness/memory/user_text.hpp"
#include "scenarios/models/transformer/model_choice.hpp"

namespace oomlab::scenarios {
namespace {

using namespace weights7b;

constexpr DType kFileDtypes[] = {DType::f32, DType::bf16, DType::f16};

DType file_dtype_from(const std::string& name) {
  for (DType dtype : kFileDtypes) {
    if (name == dtype_name(dtype)) return dtype;
  }
  throw std::invalid_argument("unknown dtype '" + name + "'");
}

// fixed-bf16-file reads a bf16 file; the others an f32 one, unless --set says otherwise.
DType default_file_dtype(const std::string& variant) {
  return variant == kFixedBf16File ? DType::bf16 : DType::f32;
}

// A bf16 file into bf16 weights has no device ring: its bytes go straight in (weight_loader.hpp).
bool streams_straight_in(const std::string& variant, DType file_dtype) {
  return file_dtype == DType::bf16 && (variant == kFixed || variant == kFixedBf16File);
}

// The longest row a layout stages (a chunk holds whole rows): down_proj's (hidden, ffn) rows
// are ffn long, every other tensor's hidden.
std::int64_t longest_row(const safetensors::LlamaShape& shape) { return std::max(shape.hidden, shape.ffn); }

}  // namespace

safetensors::LlamaShape llama_shape_of(const std::string& model) {
  for (const std::string& preset : safetensors::llama_preset_names()) {
    if (preset == model) return safetensors::llama_preset(model);
  }
  const std::vector<std::string> transformers = model::transformer_preset_names();
  std::error_code no_file;
  if (std::find(transformers.begin(), transformers.end(), model) == transformers.end() &&
      model.find('/') == std::string::npos && !std::filesystem::exists(model, no_file)) {
    std::string known;
    for (const std::string& preset : safetensors::llama_preset_names()) known += (known.empty() ? "" : ", ") + preset;
    throw std::invalid_argument("model " + quote_user_text(model) + " is not one of " + known +
                                ", nor a LLaMA-layout transformer preset (llama-3-8b, mistral-7b: oomlab list "
                                "--models) or a config.json (or its folder)");
  }
  const model::TransformerConfig config = model::resolve_model(model);
  const auto refuse = [&](const std::string& why) {
    throw std::invalid_argument(config.name + " (" + config.architecture + ") " + why +
                                ": weights7b generates and loads LLaMA-layout checkpoints");
  };
  if (config.is_gpt2()) refuse("is GPT-2 style");
  if (config.qkv_bias) refuse("has q/k/v biases");
  if (config.tied_embeddings) refuse("ties its LM head to the embedding");
  if (config.head_dim() * config.heads != config.channels) refuse("has head_dim x heads != hidden_size");
  safetensors::LlamaShape shape{config.name, config.channels, config.layers, config.heads,
                                config.kv_head_count(), config.ffn, config.vocab};
  if (model != config.name) {  // a config file: its name and sizes, safe in a file name
    for (char& c : shape.name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
    }
    for (std::int64_t size : {shape.hidden, shape.layers, shape.heads, shape.kv_heads, shape.ffn}) {
      shape.name += (shape.name.back() == 'x' ? "" : "-") + std::to_string(size) + "x";
    }
    shape.name += std::to_string(shape.vocab);
  }
  return shape;
}

std::vector<KnobSpec> weights7b_knob_specs() {
  return {
      KnobSpec::choice_or("model", "LLaMA shapes to load (Hugging Face LlamaForCausalLM names; no weights downloaded)",
                          safetensors::llama_preset_names(),
                          "a LLaMA-layout transformer preset (llama-3-8b, mistral-7b) or config.json (or its folder)",
                          [](const std::string& model) {
                            llama_shape_of(model);  // refuses a layout weights7b cannot make
                            return model::recorded_model_choice(model);
                          }),
      KnobSpec::choice("dtype", "the checkpoint file's dtype; the weights load as bf16 (int8 in fixed-int8). A "
                                "file of your own: $OOMLAB_WEIGHTS7B_<DTYPE>",
                       {"f32", "bf16", "f16"}),
      KnobSpec::integer("chunk_kib", "one slot of the two-slot device staging ring, in KiB (fixed and fixed-int8 "
                                     "with an f32 or f16 file)",
                        1, std::int64_t{4} << 20),
  };
}

std::map<std::string, std::string> weights7b_knob_values(const std::string& variant, Scale scale) {
  const Weights7bPlan plan = weights7b_plan(scale);
  return {{"model", plan.preset},
          {"dtype", dtype_name(default_file_dtype(variant))},
          {"chunk_kib", std::to_string(plan.chunk_bytes / KiB)}};
}

Weights7bPlan weights7b_plan(const std::string& variant, Scale scale, const KnobValues& knobs) {
  const Weights7bPlan defaults = weights7b_plan(scale);
  Weights7bPlan plan;
  plan.preset = knobs.text("model");
  plan.file_dtype = file_dtype_from(knobs.text("dtype"));
  plan.chunk_bytes = static_cast<std::size_t>(knobs.integer("chunk_kib")) * KiB;
  plan.model_chosen_by = plan.preset == defaults.preset ? std::string("--scale ") + scale_name(scale)
                                                        : "--set model=" + plan.preset;
  const std::string dtype = dtype_name(plan.file_dtype);
  if (variant == kFixedBf16File && plan.file_dtype != DType::bf16) {
    throw std::invalid_argument("--variant fixed-bf16-file streams a bf16 file; for dtype=" + dtype +
                                " run --variant fixed --set dtype=" + dtype);
  }
  const bool chunk_set = plan.chunk_bytes != defaults.chunk_bytes;
  if (chunk_set && variant == kBroken) {
    throw std::invalid_argument("--variant broken uploads the whole file at once: it has no staging chunk, so "
                                "chunk_kib has no effect (it sizes fixed's and fixed-int8's ring)");
  }
  if (chunk_set && streams_straight_in(variant, plan.file_dtype)) {
    throw std::invalid_argument("a bf16 file streams straight into the bf16 weights with no device ring: "
                                "chunk_kib has no effect (it sizes the ring for an f32 or f16 file, or fixed-int8)");
  }
  const safetensors::LlamaShape shape = llama_shape_of(plan.preset);
  const std::size_t row_bytes = static_cast<std::size_t>(longest_row(shape)) * dtype_size(plan.file_dtype);
  if (variant != kBroken && row_bytes > plan.chunk_bytes) {
    throw std::invalid_argument("chunk_kib=" + std::to_string(plan.chunk_bytes / KiB) + " holds less than one " +
                                plan.preset + " row of " + std::to_string(longest_row(shape)) + " " + dtype +
                                " elements (mlp.down_proj): take chunk_kib >= " +
                                std::to_string((row_bytes + KiB - 1) / KiB));
  }
  return plan;
}

}  // namespace oomlab::scenarios
