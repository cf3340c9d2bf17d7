#include "scenarios/models/transformer/hf_config.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "harness/memory/user_text.hpp"
#include "scenarios/models/safetensors/header_json.hpp"
#include "scenarios/models/safetensors/safetensors_format.hpp"

namespace oomlab::model {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Bounds no released model comes near (Llama 3.1 405B: hidden 16384, 126 layers, 128 heads,
// vocab 128256) and under which every size product fits in 64 bits: (L, F, C) < 2^12 * 2^20 * 2^18.
constexpr std::int64_t kMaxHidden = std::int64_t{1} << 18;
constexpr std::int64_t kMaxIntermediate = std::int64_t{1} << 20;
constexpr std::int64_t kMaxLayers = std::int64_t{1} << 12;
constexpr std::int64_t kMaxHeads = std::int64_t{1} << 12;
constexpr std::int64_t kMaxHeadDim = std::int64_t{1} << 12;
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;
constexpr std::int64_t kMaxPositions = std::int64_t{1} << 24;

struct Architecture {
  const char* name;
  const char* model_type;  // config.json's model_type: names the class when "architectures" is absent
  ModelStyle style;
  std::int64_t default_positions;  // the config class's max_position_embeddings default
};
constexpr Architecture kArchitectures[] = {
    {"LlamaForCausalLM", "llama", ModelStyle::llama, 2048},
    {"MistralForCausalLM", "mistral", ModelStyle::llama, 4096 * 32},
    {"Qwen2ForCausalLM", "qwen2", ModelStyle::llama, 32768},
    {"GPT2LMHeadModel", "gpt2", ModelStyle::gpt2, 1024},
};

std::string supported_list() {
  std::string names;
  for (const Architecture& a : kArchitectures) names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

// Typed reads of the config's fields; every failure one line: "LABEL: field: what is wrong".
class Fields {
 public:
  Fields(const json& root, const std::string& label) : root_(root), label_(label) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw std::invalid_argument(label_ + ": " + field + ": " + what);
  }

  // Absent and null read as nullopt (transformers writes null for "use the default").
  std::optional<std::int64_t> integer(const char* field, std::int64_t min, std::int64_t max) const {
    const json* value = find(field);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number_integer()) fail(field, "expected a whole number, got " + shown(*value));
    if (value->is_number_unsigned() && value->get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
      fail(field, shown(*value) + " is out of range " + std::to_string(min) + ".." + std::to_string(max));
    }
    const auto number = value->get<std::int64_t>();
    if (number < min || number > max) {
      fail(field, shown(*value) + " is out of range " + std::to_string(min) + ".." + std::to_string(max));
    }
    return number;
  }
  std::int64_t required_integer(const char* field, std::int64_t min, std::int64_t max) const {
    const std::optional<std::int64_t> value = integer(field, min, max);
    if (!value) fail(field, "missing (a whole number " + std::to_string(min) + ".." + std::to_string(max) + ")");
    return *value;
  }
  bool boolean(const char* field, bool fallback) const {
    const json* value = find(field);
    if (value == nullptr) return fallback;
    if (!value->is_boolean()) fail(field, "expected true or false, got " + shown(*value));
    return value->get<bool>();
  }
  double number(const char* field, double fallback, double max, const char* max_text) const {
    const json* value = find(field);
    if (value == nullptr) return fallback;
    if (!value->is_number()) fail(field, "expected a number, got " + shown(*value));
    const auto number = value->get<double>();
    if (!(number > 0.0 && number <= max)) fail(field, shown(*value) + " is out of range (0, " + max_text + "]");
    return number;
  }
  std::optional<std::string> text(const char* field) const {
    const json* value = find(field);
    if (value == nullptr) return std::nullopt;
    if (!value->is_string()) fail(field, "expected a string, got " + shown(*value));
    return value->get<std::string>();
  }
  const json* find(const char* field) const {
    const auto it = root_.find(field);
    return it == root_.end() || it->is_null() ? nullptr : &*it;
  }

 private:
  // A value as the file has it, quoted and capped (nesting is capped, so dump() is safe).
  static std::string shown(const json& value) { return quote_user_text(value.dump()); }

  const json& root_;
  const std::string& label_;
};

const Architecture& architecture_of(const Fields& fields) {
  std::string name;
  if (const json* list = fields.find("architectures")) {
    if (!list->is_array() || list->empty() || !(*list)[0].is_string()) {
      fields.fail("architectures", "expected a list of class names, e.g. [\"LlamaForCausalLM\"]");
    }
    name = (*list)[0].get<std::string>();
    for (const Architecture& a : kArchitectures) {
      if (name == a.name) return a;
    }
    fields.fail("architectures", quote_user_text(name) + " is not supported (supported: " + supported_list() + ")");
  }
  const std::optional<std::string> model_type = fields.text("model_type");
  if (!model_type) fields.fail("architectures", "missing (and no model_type to tell the architecture)");
  for (const Architecture& a : kArchitectures) {
    if (*model_type == a.model_type) return a;
  }
  fields.fail("model_type", quote_user_text(*model_type) + " is not supported (supported: " + supported_list() + ")");
}

std::string torch_dtype_of(const Fields& fields) {
  // transformers 4.56 renamed the field to "dtype"; older files say "torch_dtype".
  const char* field = fields.find("torch_dtype") ? "torch_dtype" : "dtype";
  const std::optional<std::string> dtype = fields.text(field);
  if (!dtype) return "float32";  // what PyTorch loads a config without one in (GPT-2's)
  for (const char* known : {"float32", "bfloat16", "float16"}) {
    if (*dtype == known) return *dtype;
  }
  fields.fail(field, quote_user_text(*dtype) + " is not float32, bfloat16 or float16");
}

void read_gpt2(const Fields& f, TransformerConfig& c) {
  c.channels = f.required_integer("n_embd", 1, kMaxHidden);
  c.layers = f.required_integer("n_layer", 1, kMaxLayers);
  c.heads = f.required_integer("n_head", 1, kMaxHeads);
  c.vocab = f.required_integer("vocab_size", 1, kMaxVocab);
  c.max_seq = f.integer("n_positions", 1, kMaxPositions).value_or(1024);
  c.ffn = f.integer("n_inner", 1, kMaxIntermediate).value_or(4 * c.channels);
  if (c.channels % c.heads != 0) {
    f.fail("n_head", std::to_string(c.heads) + " does not divide n_embd = " + std::to_string(c.channels));
  }
  c.kv_heads = c.heads;
  c.head_size = c.channels / c.heads;
  c.tied_embeddings = f.boolean("tie_word_embeddings", true);
  c.qkv_bias = true;
}

void read_llama_style(const Fields& f, const Architecture& arch, TransformerConfig& c) {
  c.channels = f.required_integer("hidden_size", 1, kMaxHidden);
  c.ffn = f.required_integer("intermediate_size", 1, kMaxIntermediate);
  c.layers = f.required_integer("num_hidden_layers", 1, kMaxLayers);
  c.heads = f.required_integer("num_attention_heads", 1, kMaxHeads);
  c.vocab = f.required_integer("vocab_size", 1, kMaxVocab);
  c.kv_heads = f.integer("num_key_value_heads", 1, kMaxHeads).value_or(c.heads);
  if (c.heads % c.kv_heads != 0) {
    f.fail("num_key_value_heads", std::to_string(c.kv_heads) + " does not divide num_attention_heads = " +
                                      std::to_string(c.heads) + " (each key/value head serves a whole group)");
  }
  const std::optional<std::int64_t> head_dim = f.integer("head_dim", 1, kMaxHeadDim);
  if (!head_dim && c.channels % c.heads != 0) {
    f.fail("num_attention_heads", std::to_string(c.heads) + " does not divide hidden_size = " +
                                      std::to_string(c.channels) + " (and no head_dim is given)");
  }
  c.head_size = head_dim.value_or(c.channels / c.heads);
  if (c.head_size > kMaxHeadDim)
    f.fail("hidden_size", "gives head_dim " + std::to_string(c.head_size) + " > " + std::to_string(kMaxHeadDim));
  if (c.head_size % 2 != 0) {
    f.fail(head_dim ? "head_dim" : "hidden_size", "head_dim " + std::to_string(c.head_size) +
                                                     " is odd: rotary embeddings rotate pairs");
  }
  c.max_seq = f.integer("max_position_embeddings", 1, kMaxPositions).value_or(arch.default_positions);
  c.tied_embeddings = f.boolean("tie_word_embeddings", false);
  c.rope_theta = f.number("rope_theta", 10000.0, 1e12, "1e12");
  const bool qwen2 = c.architecture == "Qwen2ForCausalLM";
  if (qwen2) {
    c.qkv_bias = true;  // Qwen2Attention's q/k/v always have biases; o_proj none
  } else if (f.boolean("attention_bias", false)) {
    f.fail("attention_bias", "true puts biases on q, k, v and o_proj, which is not modelled (Qwen2's q/k/v "
                             "biases are)");
  }
  if (f.boolean("mlp_bias", false)) f.fail("mlp_bias", "true puts biases on the MLP, which is not modelled");
  const bool window_used = c.architecture == "MistralForCausalLM" ||
                           (qwen2 && f.boolean("use_sliding_window", false));
  if (window_used) c.sliding_window = f.integer("sliding_window", 1, kMaxPositions).value_or(0);
}

std::string config_label(const fs::path& file) {
  return file.filename() == "config.json" && file.has_parent_path() ? file.parent_path().filename().string()
                                                                    : file.stem().string();
}

}  // namespace

bool supported_hf_architecture(std::string_view architecture) {
  for (const Architecture& a : kArchitectures) {
    if (architecture == a.name) return true;
  }
  return false;
}

TransformerConfig parse_hf_config(std::string_view json_text, const std::string& label) {
  static const safetensors::JsonDocument document{
      "config", "a config.json needs 3", [](int, const std::string&, const std::string& key) {
        return "field " + quote_user_text(key) + " is given twice";
      }};
  json root;
  try {
    root = safetensors::parse_checked_json(json_text, label, document);
  } catch (const safetensors::SafetensorsError& e) {
    throw std::invalid_argument(e.what());
  }
  if (!root.is_object()) throw std::invalid_argument(label + ": a config.json is a JSON object ({...})");
  const Fields fields(root, label);
  const Architecture& arch = architecture_of(fields);
  TransformerConfig config;
  config.name = label;
  config.style = arch.style;
  config.architecture = arch.name;
  config.torch_dtype = torch_dtype_of(fields);
  if (arch.style == ModelStyle::gpt2) read_gpt2(fields, config);
  else read_llama_style(fields, arch, config);
  return config;
}

std::string hf_config_file(const std::string& path) {
  std::error_code error;
  fs::path file = fs::absolute(fs::path(path), error);
  if (error) throw std::invalid_argument(quote_user_text(path) + ": " + error.message());
  if (fs::is_directory(file, error)) file /= "config.json";
  return file.lexically_normal().string();
}

TransformerConfig read_hf_config(const std::string& path) {
  const std::string file = hf_config_file(path);
  const std::string shown = quote_user_text(file, 200);
  std::error_code error;
  const fs::file_status status = fs::status(file, error);  // follows a symlink: its target must qualify
  if (!fs::exists(status)) {
    throw std::invalid_argument(shown + ": no such file (give a config.json or the folder holding one)");
  }
  if (!fs::is_regular_file(status)) throw std::invalid_argument(shown + ": not a regular file");
  const std::uintmax_t size = fs::file_size(file, error);
  if (error || size > kMaxHfConfigBytes) {
    throw std::invalid_argument(shown + ": " +
                                (error ? error.message()
                                       : std::to_string(size) + " bytes; a config.json is "
                                                                "a few hundred (the limit is 1 MiB)"));
  }
  std::ifstream in(file, std::ios::binary);
  std::string text(kMaxHfConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw std::invalid_argument(shown + ": cannot be read");
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxHfConfigBytes) throw std::invalid_argument(shown + ": grew past 1 MiB while read");
  TransformerConfig config = parse_hf_config(text, file);
  config.name = config_label(fs::path(file));
  return config;
}

}  // namespace oomlab::model
