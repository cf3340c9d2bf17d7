// Hugging Face config.json -> TransformerConfig: each Hub config in tests/configs parses to the
// preset of the same name with the repository's published parameter count; every bad field,
// type, range and file is refused in one line that names it; a path is recorded with its
// architecture and a re-run from the record checks it.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "scenarios/models/transformer/hf_config.hpp"
#include "scenarios/models/transformer/model_choice.hpp"

namespace oomlab::model {
namespace {

namespace fs = std::filesystem;

const fs::path kConfigs = OOMLAB_TRANSFORMER_TEST_CONFIGS;

// Every field of the table but the name (a file's config is named after its folder).
void expect_same_shape(const TransformerConfig& parsed, const TransformerConfig& preset) {
  EXPECT_EQ(parsed.style, preset.style);
  EXPECT_EQ(parsed.vocab, preset.vocab);
  EXPECT_EQ(parsed.max_seq, preset.max_seq);
  EXPECT_EQ(parsed.layers, preset.layers);
  EXPECT_EQ(parsed.heads, preset.heads);
  EXPECT_EQ(parsed.kv_heads, preset.kv_heads);
  EXPECT_EQ(parsed.head_size, preset.head_size);
  EXPECT_EQ(parsed.channels, preset.channels);
  EXPECT_EQ(parsed.ffn, preset.ffn);
  EXPECT_EQ(parsed.tied_embeddings, preset.tied_embeddings);
  EXPECT_EQ(parsed.qkv_bias, preset.qkv_bias);
  EXPECT_EQ(parsed.rope_theta, preset.rope_theta);
  EXPECT_EQ(parsed.sliding_window, preset.sliding_window);
  EXPECT_EQ(parsed.torch_dtype, preset.torch_dtype);
  EXPECT_EQ(parsed.architecture, preset.architecture);
}

struct HubModel {
  const char* folder;        // tests/configs/<folder>/config.json
  const char* preset;
  std::size_t parameters;    // the repository's published count
};

class HubConfig : public ::testing::TestWithParam<HubModel> {};

TEST_P(HubConfig, ParsesToItsPresetWithThePublishedParameterCount) {
  const HubModel& model = GetParam();
  const TransformerConfig parsed = read_hf_config((kConfigs / model.folder).string());
  const TransformerConfig preset = transformer_preset(model.preset);
  expect_same_shape(parsed, preset);
  EXPECT_EQ(parsed.name, model.folder);
  EXPECT_EQ(parsed.parameter_count(), model.parameters);
  EXPECT_EQ(preset.parameter_count(), model.parameters);
  // The file itself reads the same as its folder.
  expect_same_shape(read_hf_config((kConfigs / model.folder / "config.json").string()), preset);
}

INSTANTIATE_TEST_SUITE_P(Hub, HubConfig,
                         ::testing::Values(HubModel{"llama-2-7b", "llama-2-7b", 6738415616},
                                           HubModel{"llama-2-13b", "llama-2-13b", 13015864320},
                                           HubModel{"llama-3-8b", "llama-3-8b", 8030261248},
                                           HubModel{"llama-3.1-70b", "llama-3.1-70b", 70553706496},
                                           HubModel{"mistral-7b", "mistral-7b", 7241732096},
                                           HubModel{"qwen2.5-7b", "qwen2.5-7b", 7615616512},
                                           HubModel{"qwen2.5-14b", "qwen2.5-14b", 14770033664},
                                           HubModel{"gpt2", "gpt2-124m", 124439808},
                                           HubModel{"gpt2-medium", "gpt2-350m", 354823168}),
                         [](const ::testing::TestParamInfo<HubModel>& info) {
                           std::string name = info.param.folder;
                           for (char& c : name)
                             if (c == '-' || c == '.') c = '_';
                           return name;
                         });

TEST(Presets, TheOldNamesAndTheHubsGpt2NamesStillResolve) {
  EXPECT_EQ(transformer_preset("llama-7b").parameter_count(), transformer_preset("llama-2-7b").parameter_count());
  EXPECT_EQ(transformer_preset("llama-13b").parameter_count(), transformer_preset("llama-2-13b").parameter_count());
  const TransformerConfig medium = transformer_preset("gpt2-medium");
  EXPECT_EQ(medium.name, "gpt2-medium");
  EXPECT_EQ(medium.channels, transformer_preset("gpt2-350m").channels);
  EXPECT_EQ(transformer_preset_alias_of("gpt2-xl"), "gpt2-1.5b");
  EXPECT_EQ(transformer_preset_alias_of("llama-3-8b"), "");
  // Without GQA the old presets keep H = Hkv and D = C / H: their sizes did not move.
  const TransformerConfig old = transformer_preset("llama-7b");
  EXPECT_EQ(old.kv_head_count(), old.heads);
  EXPECT_EQ(old.qkv_width(), 3 * old.channels);
}

// The message parse_hf_config throws for `json`, or "" when it parses.
std::string error_of(const std::string& json) {
  try {
    parse_hf_config(json, "cfg");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

const std::string kLlama =
    R"("architectures": ["LlamaForCausalLM"], "hidden_size": 256, "intermediate_size": 688,
       "num_hidden_layers": 4, "num_attention_heads": 8, "vocab_size": 1000)";

TEST(HfConfigErrors, EachNamesTheFieldInOneLine) {
  ASSERT_EQ(error_of("{" + kLlama + "}"), "");
  const std::pair<std::string, std::string> cases[] = {
      {R"({"architectures": ["BertModel"], "hidden_size": 8})",
       "cfg: architectures: 'BertModel' is not supported (supported: LlamaForCausalLM, MistralForCausalLM, "
       "Qwen2ForCausalLM, GPT2LMHeadModel)"},
      {R"({"architectures": "LlamaForCausalLM"})",
       "cfg: architectures: expected a list of class names, e.g. [\"LlamaForCausalLM\"]"},
      {R"({"hidden_size": 8})", "cfg: architectures: missing (and no model_type to tell the architecture)"},
      {R"({"model_type": "t5"})",
       "cfg: model_type: 't5' is not supported (supported: LlamaForCausalLM, MistralForCausalLM, "
       "Qwen2ForCausalLM, GPT2LMHeadModel)"},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 256})",
       "cfg: intermediate_size: missing (a whole number 1..1048576)"},
      {"{" + kLlama + R"(, "hidden_size": 256})", "cfg: field 'hidden_size' is given twice"},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": "4096"})",
       "cfg: hidden_size: expected a whole number, got '\"4096\"'"},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096.5})",
       "cfg: hidden_size: expected a whole number, got '4096.5'"},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": -4096})",
       "cfg: hidden_size: '-4096' is out of range 1..262144"},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 0})",
       "cfg: hidden_size: '0' is out of range 1..262144"},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 18446744073709551615})",
       "cfg: hidden_size: '18446744073709551615' is out of range 1..262144"},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 256, "intermediate_size": 688,
          "num_hidden_layers": 100000})",
       "cfg: num_hidden_layers: '100000' is out of range 1..4096"},
      {"{" + kLlama.substr(0, kLlama.size()) + R"(, "num_key_value_heads": 3})",
       "cfg: num_key_value_heads: 3 does not divide num_attention_heads = 8 (each key/value head serves a whole "
       "group)"},
      {"{" + kLlama + R"(, "head_dim": 33})", "cfg: head_dim: head_dim 33 is odd: rotary embeddings rotate pairs"},
      {"{" + kLlama + R"(, "rope_theta": -1})", "cfg: rope_theta: '-1' is out of range (0, 1e12]"},
      {"{" + kLlama + R"(, "tie_word_embeddings": "no"})",
       "cfg: tie_word_embeddings: expected true or false, got '\"no\"'"},
      {"{" + kLlama + R"(, "torch_dtype": "int4"})", "cfg: torch_dtype: 'int4' is not float32, bfloat16 or float16"},
      {"{" + kLlama + R"(, "attention_bias": true})",
       "cfg: attention_bias: true puts biases on q, k, v and o_proj, which is not modelled (Qwen2's q/k/v biases are)"},
      {"{" + kLlama + R"(, "mlp_bias": true})", "cfg: mlp_bias: true puts biases on the MLP, which is not modelled"},
      {R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 100, "n_layer": 2, "n_head": 3, "vocab_size": 50})",
       "cfg: n_head: 3 does not divide n_embd = 100"},
      {R"({"architectures": ["GPT2LMHeadModel"], "n_layer": 2, "n_head": 2, "vocab_size": 50})",
       "cfg: n_embd: missing (a whole number 1..262144)"},
      {"[1, 2]", "cfg: a config.json is a JSON object ({...})"},
      {"{\"hidden_size\": ", "cfg: the config is not valid JSON"},
      {std::string(100, '[') + std::string(100, ']'),
       "cfg: the config is nested deeper than 64 levels (a config.json needs 3)"},
  };
  for (const auto& [json, message] : cases) {
    const std::string error = error_of(json);
    EXPECT_EQ(error, message) << json;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(HfConfig, DefaultsAreTheConfigClassesOwn) {
  const TransformerConfig llama = parse_hf_config("{" + kLlama + "}", "cfg");
  EXPECT_EQ(llama.kv_head_count(), 8);     // num_key_value_heads = num_attention_heads
  EXPECT_EQ(llama.head_dim(), 32);         // hidden_size / heads
  EXPECT_EQ(llama.max_seq, 2048);          // LlamaConfig's max_position_embeddings
  EXPECT_FALSE(llama.tied_embeddings);
  EXPECT_EQ(llama.rope_theta, 10000.0);
  EXPECT_EQ(llama.torch_dtype, "float32");
  // model_type names the class when "architectures" is missing; null reads as the default.
  const TransformerConfig qwen = parse_hf_config(
      R"({"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
          "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": true,
          "sliding_window": 32768, "use_sliding_window": false, "head_dim": null, "dtype": "bfloat16"})",
      "qwen2.5-0.5b");
  EXPECT_EQ(qwen.architecture, "Qwen2ForCausalLM");
  EXPECT_TRUE(qwen.qkv_bias);
  EXPECT_TRUE(qwen.tied_embeddings);
  EXPECT_EQ(qwen.sliding_window, 0);  // use_sliding_window false: full attention
  EXPECT_EQ(qwen.torch_dtype, "bfloat16");
  // Qwen/Qwen2.5-0.5B's published count: 494,032,768 (tied: one V x C table).
  EXPECT_EQ(qwen.parameter_count(), 494032768u);
  // An explicit head_dim that is not C / H (as Gemma's and Qwen3's are): q and o use H*D.
  const TransformerConfig wide = parse_hf_config("{" + kLlama + R"(, "head_dim": 64, "num_key_value_heads": 2})", "c");
  EXPECT_EQ(wide.q_width(), 512);
  EXPECT_EQ(wide.qkv_width(), 512 + 2 * 128);
}

// Every field of every Hub config replaced by each hostile value: the parse either succeeds (a
// field it does not read, or a value in range) or throws std::invalid_argument in one line that
// names the file; never another exception, never a config with a non-positive size.
TEST(HfConfigErrors, HostileValuesInEveryFieldAreOneLineOrHarmless) {
  const char* const hostile[] = {"-1", "0", "1e308", "-1e308", "9223372036854775807", "18446744073709551616",
                                 "\"4096\"", "[]", "{}", "null", "true", "0.5", "[[[[1]]]]"};
  for (const auto& folder : fs::directory_iterator(kConfigs)) {
    if (!folder.is_directory()) continue;
    std::ifstream in(folder.path() / "config.json");
    const nlohmann::json original = nlohmann::json::parse(in);
    for (const auto& [field, value] : original.items()) {
      for (const char* bad : hostile) {
        nlohmann::json mutated = original;
        mutated[field] = nlohmann::json::parse(bad);
        try {
          const TransformerConfig config = parse_hf_config(mutated.dump(), "cfg");
          EXPECT_GT(config.channels, 0) << field << "=" << bad;
          EXPECT_GT(config.layers, 0) << field << "=" << bad;
          EXPECT_GT(config.kv_head_count(), 0) << field << "=" << bad;
          EXPECT_EQ(config.heads % config.kv_head_count(), 0) << field << "=" << bad;
          EXPECT_GT(config.parameter_count(), 0u) << field << "=" << bad;
        } catch (const std::invalid_argument& e) {
          const std::string message = e.what();
          EXPECT_EQ(message.rfind("cfg: ", 0), 0u) << message;
          EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        }
      }
    }
  }
}

// A fresh folder under the system temp directory, removed at the end of the test.
struct TempFolder {
  fs::path path;
  TempFolder() : path(fs::temp_directory_path() / ("oomlab-hf-config-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempFolder() { fs::remove_all(path); }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return path / name;
  }
};

std::string read_error(const std::string& path) {
  try {
    read_hf_config(path);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(HfConfigFiles, HostileFilesAreRefusedBeforeTheyAreRead) {
  TempFolder temp;
  const fs::path big =
      temp.write("big.json", "{" + kLlama + ", \"pad\": \"" + std::string(kMaxHfConfigBytes, 'x') + "\"}");
  EXPECT_NE(read_error(big.string()).find("bytes; a config.json is a few hundred (the limit is 1 MiB)"),
            std::string::npos);
  const fs::path fifo = temp.path / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(read_error(fifo.string()).find(": not a regular file"), std::string::npos);  // opening it would block
  fs::create_directories(temp.path / "empty");
  EXPECT_NE(read_error((temp.path / "empty").string()).find("empty/config.json': no such file"), std::string::npos);
  const fs::path bad = temp.write("bad.json", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": -1}");
  EXPECT_EQ(read_error(bad.string()), bad.string() + ": hidden_size: '-1' is out of range 1..262144");
}

TEST(ModelChoice, APathIsRecordedWithItsArchitectureAndCheckedOnReRun) {
  EXPECT_EQ(recorded_model_choice("llama-3-8b"), "llama-3-8b");
  EXPECT_EQ(resolve_model("gpt2").name, "gpt2");
  TempFolder temp;
  fs::create_directories(temp.path / "my-model");
  temp.write("my-model/config.json", "{" + kLlama + "}");
  const std::string folder = (temp.path / "my-model").string();
  const std::string recorded = recorded_model_choice(folder);
  EXPECT_EQ(recorded, (temp.path / "my-model" / "config.json").string() + "#LlamaForCausalLM");
  EXPECT_EQ(recorded_model_choice(recorded), recorded);  // idempotent: a record re-resolves to itself
  EXPECT_EQ(resolve_model(recorded).name, "my-model");
  EXPECT_EQ(resolve_model(recorded).channels, 256);
  // The file changed under the record: refused, naming both.
  temp.write("my-model/config.json",
             "{" + std::string(kLlama).replace(kLlama.find("LlamaForCausalLM"), 16, "MistralForCausalLM") + "}");
  try {
    resolve_model(recorded);
    FAIL() << "a changed architecture must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("now holds a MistralForCausalLM, the record says LlamaForCausalLM"),
              std::string::npos)
        << e.what();
  }
  try {
    resolve_model("llama-3-8B");
    FAIL() << "an unknown name must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("model 'llama-3-8B' is neither a preset ("), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(") nor a config.json or a folder holding one"), std::string::npos);
  }
}

}  // namespace
}  // namespace oomlab::model
