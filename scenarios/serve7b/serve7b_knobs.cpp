#include "scenarios/serve7b/serve7b_knobs.hpp"

#include <algorithm>
#include <stdexcept>

#include "scenarios/models/transformer/model_choice.hpp"
#include "scenarios/models/transformer/transformer_config.hpp"

namespace oomlab::scenarios::serve7b {
namespace {

struct ScaleDefaults {
  const char* model;
  int concurrency, growing_concurrency, prompt_min, prompt_max, output_min, output_max, block_tokens, max_batch_tokens,
      truncate;
};

ScaleDefaults defaults_of(Scale scale) {
  switch (scale) {
    case Scale::tiny: return {"llama-tiny", 3, 3, 256, 1024, 8, 32, 16, 1056, 128};
    case Scale::small: return {"llama-small", 8, 4, 64, 512, 16, 128, 16, 640, 64};
    case Scale::full: return {"llama-7b", 16, 5, 128, 4096, 32, 512, 32, 4608, 512};
  }
  throw std::invalid_argument("serve7b: unknown scale");
}

std::vector<std::string> llama_presets() {
  std::vector<std::string> names;
  for (const std::string& name : model::transformer_preset_names()) {
    if (!model::transformer_preset(name).is_gpt2()) names.push_back(name);
  }
  return names;
}

serve::CacheKind cache_from(const std::string& name) {
  if (name == "padded") return serve::CacheKind::padded;
  if (name == "growing") return serve::CacheKind::growing;
  return serve::CacheKind::paged;
}

}  // namespace

std::vector<std::string> variant_names() {
  return {kBrokenPadded, kBrokenGrowing, kBrokenF32, kFixedHalf, kFixedShorter, kFixedPaged, kFixedKvInt8};
}

std::vector<KnobSpec> knob_specs() {
  return {
      KnobSpec::choice_or("model",
                          "LLaMA-style shapes served (random weights, nothing downloaded): a preset (oomlab list "
                          "--models) or your model's Hugging Face config.json",
                          llama_presets(), "a LLaMA-style config.json or the folder holding one",
                          [](const std::string& path) {
                            // GPT-2's learned positions have no place in this engine's RoPE decode.
                            if (model::resolve_model(path).is_gpt2()) {
                              throw std::invalid_argument(path + ": a GPT-2 model; serve7b serves LLaMA-style models "
                                                                 "(Llama, Mistral, Qwen2: rotary positions)");
                            }
                            return model::recorded_model_choice(path);
                          }),
      KnobSpec::integer("concurrency", "sequences running at once (a static batch's size; paged: the most admitted)", 1,
                        4096),
      KnobSpec::integer("prompt_min", "shortest prompt, tokens (lengths uniform in [min, max])", 1, 1 << 20),
      KnobSpec::integer("prompt_max", "longest prompt, tokens", 1, 1 << 20),
      KnobSpec::integer("output_min", "fewest generated tokens a request asks for", 1, 1 << 20),
      KnobSpec::integer("output_max", "most generated tokens a request asks for", 1, 1 << 20),
      KnobSpec::choice("cache",
                       "KV cache: padded (static batch, reserved for its longest), growing (concatenated "
                       "each step), paged (blocks, continuous batching, preemption)",
                       {"padded", "growing", "paged"}),
      KnobSpec::choice("dtype", "the weights' dtype (f32: a model never .half()-ed)", {"f32", "bf16"}),
      KnobSpec::choice("kv_dtype", "the KV cache's dtype (int8: absmax per token and head)", {"bf16", "int8"}),
      KnobSpec::integer("block_tokens", "tokens per KV block (paged)", 1, 4096),
      KnobSpec::integer("max_batch_tokens",
                        "prefill tokens per step (paged); at least prompt_max + output_max - 1, "
                        "since a preempted request is recomputed in one prefill",
                        1, 1 << 22),
      KnobSpec::integer("truncate_prompt", "keep only the last N prompt tokens (0: all); changes the answers", 0,
                        1 << 20),
      KnobSpec::integer("seed", "the workload's lengths and tokens, and the random weights", 0, 1 << 30),
  };
}

std::map<std::string, std::string> knob_values(const std::string& variant, Scale scale) {
  const ScaleDefaults d = defaults_of(scale);
  std::map<std::string, std::string> values{
      {"model", d.model},
      {"concurrency", std::to_string(d.concurrency)},
      {"prompt_min", std::to_string(d.prompt_min)},
      {"prompt_max", std::to_string(d.prompt_max)},
      {"output_min", std::to_string(d.output_min)},
      {"output_max", std::to_string(d.output_max)},
      {"cache", "paged"},
      {"dtype", "bf16"},
      {"kv_dtype", "bf16"},
      {"block_tokens", std::to_string(d.block_tokens)},
      {"max_batch_tokens", std::to_string(d.max_batch_tokens)},
      {"truncate_prompt", "0"},
      {"seed", "1"},
  };
  if (variant == kBrokenF32) {
    values["dtype"] = "f32";
  } else if (variant == kBrokenPadded) {
    values["cache"] = "padded";
  } else if (variant == kBrokenGrowing) {
    values["cache"] = "growing";
    values["concurrency"] = std::to_string(d.growing_concurrency);  // live bytes fit; the reserved do not
  } else if (variant == kFixedHalf) {
    values["cache"] = "padded";
    values["concurrency"] = "1";  // bf16 weights, one request at a time
  } else if (variant == kFixedShorter) {
    values["cache"] = "padded";
    values["truncate_prompt"] = std::to_string(d.truncate);
  } else if (variant == kFixedPaged) {
  } else if (variant == kFixedKvInt8) {
    values["kv_dtype"] = "int8";
    values["concurrency"] = std::to_string(2 * d.concurrency);  // half the bytes a token: twice the users
    // An int8 block of 32 LLaMA-7B tokens is 8.25 MiB, which the allocator serves from 20 MiB
    // segments two at a time (10 MiB each); 64 tokens take an 18 MiB segment of 16.5 MiB.
    values["block_tokens"] = std::to_string(2 * d.block_tokens);
  } else {
    throw std::invalid_argument("serve7b: unknown variant '" + variant + "'");
  }
  return values;
}

serve::ServePlan make_plan(const KnobValues& knobs, int requests) {
  serve::ServePlan plan;
  plan.engine.config = model::resolve_model(knobs.text("model"));
  plan.engine.weights_dtype = knobs.text("dtype") == "f32" ? DType::f32 : DType::bf16;
  plan.engine.kv_dtype = knobs.text("kv_dtype") == "int8" ? DType::i8 : DType::bf16;
  plan.engine.cache = cache_from(knobs.text("cache"));
  plan.engine.block_tokens = static_cast<int>(knobs.integer("block_tokens"));
  plan.concurrency = static_cast<int>(knobs.integer("concurrency"));
  plan.max_batch_tokens = static_cast<int>(knobs.integer("max_batch_tokens"));
  plan.model_seed = static_cast<std::uint32_t>(knobs.integer("seed"));
  serve::WorkloadSpec& w = plan.workload;
  w.requests = requests;
  w.prompt_min = static_cast<int>(knobs.integer("prompt_min"));
  w.prompt_max = static_cast<int>(knobs.integer("prompt_max"));
  w.output_min = static_cast<int>(knobs.integer("output_min"));
  w.output_max = static_cast<int>(knobs.integer("output_max"));
  w.truncate_prompt = static_cast<int>(knobs.integer("truncate_prompt"));
  w.seed = plan.model_seed;
  w.vocab = plan.engine.config.vocab;
  if (w.prompt_min > w.prompt_max) throw std::invalid_argument("serve7b: prompt_min is above prompt_max");
  if (w.output_min > w.output_max) throw std::invalid_argument("serve7b: output_min is above output_max");
  if (plan.engine.cache == serve::CacheKind::paged) {
    const int longest =
        (w.truncate_prompt > 0 ? std::min(w.truncate_prompt, w.prompt_max) : w.prompt_max) + w.output_max - 1;
    if (plan.max_batch_tokens < longest) {
      throw std::invalid_argument("serve7b: max_batch_tokens " + std::to_string(plan.max_batch_tokens) +
                                  " is below the longest recompute (prompt_max + output_max - 1 = " +
                                  std::to_string(longest) + "): set max_batch_tokens=" + std::to_string(longest));
    }
  }
  return plan;
}

}  // namespace oomlab::scenarios::serve7b
