// What a user names with --set model=...: a preset ("llama-3-8b") or a Hugging Face config.json
// (or the folder holding one). Records keep a path as "/abs/path/config.json#LlamaForCausalLM",
// so a record says which file and what it held, and a re-run from the record refuses a file
// whose architecture has since changed.
#pragma once
#include <string>
#include <string_view>

#include "scenarios/models/transformer/transformer_config.hpp"

namespace oomlab::model {

// The config `choice` names: a preset, a path, or a recorded "path#Architecture". Throws
// std::invalid_argument with one line (an unknown name; a file's problem, hf_config.hpp).
TransformerConfig resolve_model(std::string_view choice);
// The value a record keeps for `choice`: a preset's name as given, a path as
// "/abs/path/config.json#Architecture". Reads and checks the file (throws as resolve_model).
std::string recorded_model_choice(std::string_view choice);
// "a preset (gpt2-124m, ...) or a Hugging Face config.json (or its folder)": for help texts.
std::string model_choice_help();

}  // namespace oomlab::model
