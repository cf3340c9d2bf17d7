#include "scenarios/models/transformer/model_choice.hpp"

#include <filesystem>
#include <stdexcept>

#include "harness/memory/user_text.hpp"
#include "scenarios/models/transformer/hf_config.hpp"

namespace oomlab::model {
namespace {

bool is_preset(std::string_view name) {
  for (const std::string& preset : transformer_preset_names()) {
    if (preset == name) return true;
  }
  return false;
}

struct PathChoice {
  std::string path;
  std::string recorded_architecture;  // after '#', when the choice came from a record
};

PathChoice split_recorded(std::string_view choice) {
  const auto hash = choice.rfind('#');
  if (hash != std::string_view::npos && supported_hf_architecture(choice.substr(hash + 1))) {
    return {std::string(choice.substr(0, hash)), std::string(choice.substr(hash + 1))};
  }
  return {std::string(choice), ""};
}

TransformerConfig read_choice(std::string_view choice) {
  const PathChoice parsed = split_recorded(choice);
  std::error_code error;
  if (parsed.path.empty() || !std::filesystem::exists(parsed.path, error)) {
    std::string known;
    for (const std::string& preset : transformer_preset_names()) known += (known.empty() ? "" : ", ") + preset;
    throw std::invalid_argument("model " + quote_user_text(choice) + " is neither a preset (" + known +
                                ") nor a config.json or a folder holding one");
  }
  TransformerConfig config = read_hf_config(parsed.path);
  if (!parsed.recorded_architecture.empty() && parsed.recorded_architecture != config.architecture) {
    throw std::invalid_argument(quote_user_text(parsed.path, 200) + " now holds a " + config.architecture +
                                ", the record says " + parsed.recorded_architecture);
  }
  return config;
}

}  // namespace

TransformerConfig resolve_model(std::string_view choice) {
  if (is_preset(choice)) return transformer_preset(choice);
  return read_choice(choice);
}

std::string recorded_model_choice(std::string_view choice) {
  if (is_preset(choice)) return std::string(choice);
  const TransformerConfig config = read_choice(choice);
  return hf_config_file(split_recorded(choice).path) + "#" + config.architecture;
}

std::string model_choice_help() {
  return "a preset (oomlab list --models) or a Hugging Face config.json (or the folder holding one)";
}

}  // namespace oomlab::model
