// The knobs of weights7b: which LLaMA shapes to load (`model`), the checkpoint FILE's dtype
// (`dtype`; the weights always end up bf16, or int8 in fixed-int8) and the device staging slot
// (`chunk_kib`). A variant is how to load; the knobs are what is loaded:
//
//   variant          dtype=f32                     dtype=bf16                     dtype=f16
//   broken           f32 upload + cast: 6 B/param  upload + copy: 4 B/param       upload + cast: 4 B/param
//   fixed            streamed, cast per chunk      streamed straight in (= fixed-bf16-file)  cast per chunk
//   fixed-int8       quantised per chunk           quantised per chunk            quantised per chunk
//   fixed-bf16-file  refused: use fixed            the story's bf16 file          refused: use fixed
//
// chunk_kib sizes the device ring of fixed and fixed-int8; set where there is no ring (broken, a
// bf16 file into bf16 weights) it is refused, never ignored.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "harness/runner/knobs.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/weights7b/weights7b.hpp"

namespace oomlab::scenarios {

std::vector<KnobSpec> weights7b_knob_specs();
// The checkpoint layout `model` names: one of weights7b's LLaMA presets, or any model
// model::resolve_model knows (a transformer preset such as llama-3-8b or mistral-7b, a
// Hugging Face config.json) whose checkpoint has the LLaMA layout. Throws std::invalid_argument,
// one line, for one that has not (GPT-2, Qwen2's q/k/v biases, tied embeddings, a head_dim that is
// not hidden / heads). A config's shape is named after it and its sizes ("my-model-4096x32x32x8x
// 14336x128256"), so a generated checkpoint of one never stands in for another's.
safetensors::LlamaShape llama_shape_of(const std::string& model);
// The variant's values at a scale: the scale's model and chunk, the variant's file dtype.
std::map<std::string, std::string> weights7b_knob_values(const std::string& variant, Scale scale);
// The plan with the knob values applied. Throws std::invalid_argument, one line, for a
// combination with no meaning (see the table above, or a chunk that holds no whole row).
Weights7bPlan weights7b_plan(const std::string& variant, Scale scale, const KnobValues& knobs);

}  // namespace oomlab::scenarios
