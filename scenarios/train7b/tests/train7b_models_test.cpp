// train7b with the models people fine-tune today (issue 34), on dry at full scale: Llama-3-8B's
// LoRA on a 16 GB card, QLoRA's nf4 base on an 8 GB one, a config.json path giving the same run
// as its preset (and recorded as the file plus its architecture), bad model values refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "harness/testing/run_scenario.hpp"

namespace oomlab {
namespace {

using testing::quiet_request;

const std::filesystem::path kConfigs = OOMLAB_TRANSFORMER_TEST_CONFIGS;

RunRecord lora(const std::string& settings, const std::string& budget) {
  return run_variant_in_process(
      quiet_request("train7b", "lora", DeviceKind::dry, Scale::full, budget, parse_knob_settings(settings)));
}

TEST(Train7bModels, Llama3LoraDoesNotFitSixteenGigabytesAndQloraFitsEight) {
  // bf16 base: 15.0 GiB of weights (the 128k vocabulary's embedding and head are 2 GiB of it)
  // plus a step's activations pass a 4060 Ti 16 GB; an RTX 4090 holds it.
  EXPECT_EQ(lora("model=llama-3-8b", "rtx4060ti-16g").outcome.status, OutcomeStatus::oom);
  EXPECT_EQ(lora("model=llama-3-8b", "rtx4090").outcome.status, OutcomeStatus::ok);
  // The 8 GB row: an int8 base is still too much; QLoRA's nf4 base (the embedding and head
  // stay bf16, as bitsandbytes leaves them) fits the 7B/8B models.
  EXPECT_EQ(lora("model=llama-3-8b,quantize_base=true", "rtx4060ti-8g").outcome.status, OutcomeStatus::oom);
  for (const char* model : {"llama-3-8b", "mistral-7b", "qwen2.5-7b", "llama-2-7b"}) {
    const RunRecord record = lora(std::string("model=") + model + ",quantize_base=nf4", "rtx4060ti-8g");
    EXPECT_EQ(record.outcome.status, OutcomeStatus::ok) << model << ": " << record.outcome.message;
    EXPECT_EQ(record.knobs.at("quantize_base"), "nf4");
  }
}

TEST(Train7bModels, AGqaPlanIsTheSameEveryTime) {
  const RunRecord first = lora("model=mistral-7b,quantize_base=nf4", "unlimited");
  const RunRecord second = lora("model=mistral-7b,quantize_base=nf4", "unlimited");
  EXPECT_EQ(first.memory.peak_allocated, second.memory.peak_allocated);
  EXPECT_EQ(first.memory.peak_reserved, second.memory.peak_reserved);
  EXPECT_EQ(first.memory.per_tag_peak, second.memory.per_tag_peak);
  EXPECT_GT(first.memory.peak_allocated, std::uint64_t{4} << 30);  // 3.6 GiB of nf4 base and bf16 head at least
}

TEST(Train7bModels, AConfigPathRunsAsItsPresetAndIsRecordedWithItsArchitecture) {
  const std::string folder = (kConfigs / "llama-3-8b").string();
  const RunRecord by_path = lora("model=" + folder, "unlimited");
  const RunRecord by_name = lora("model=llama-3-8b", "unlimited");
  ASSERT_EQ(by_path.outcome.status, OutcomeStatus::ok) << by_path.outcome.message;
  EXPECT_EQ(by_path.knobs.at("model"), (kConfigs / "llama-3-8b" / "config.json").string() + "#LlamaForCausalLM");
  EXPECT_EQ(by_name.knobs.at("model"), "llama-3-8b");
  EXPECT_EQ(by_path.memory.peak_allocated, by_name.memory.peak_allocated);
  EXPECT_EQ(by_path.memory.per_tag_peak, by_name.memory.per_tag_peak);
  // The recorded value runs again as it is.
  EXPECT_EQ(lora("model=" + by_path.knobs.at("model"), "unlimited").memory.peak_allocated,
            by_name.memory.peak_allocated);
}

// The message resolve_run refuses `settings` with.
std::string refusal(const std::string& settings, DeviceKind device = DeviceKind::dry) {
  try {
    resolve_run(quiet_request("train7b", "lora", device, Scale::full, "", parse_knob_settings(settings)));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Train7bModels, BadModelValuesAreOneLineNamingTheProblem) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "oomlab-train7b-bad-config.json";
  std::ofstream(file) << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 0})";
  EXPECT_EQ(refusal("model=" + file.string()),
            "train7b: knob model: " + file.string() + ": intermediate_size: '0' is out of range 1..1048576");
  std::ofstream(file) << R"({"architectures": ["T5ForConditionalGeneration"]})";
  EXPECT_NE(refusal("model=" + file.string()).find("architectures: 'T5ForConditionalGeneration' is not supported"),
            std::string::npos);
  std::filesystem::remove(file);
  EXPECT_NE(refusal("model=llama3").find("train7b: knob model: model 'llama3' is neither a preset ("),
            std::string::npos);
  EXPECT_NE(refusal("quantize_base=nf4,rank=0").find("quantize_base=nf4 freezes the base in 4 bits: it needs LoRA"),
            std::string::npos);
}

TEST(Train7bModels, QloraOnHostLearnsAndDryPlansItsPeak) {
  const KnobSettings nf4 = parse_knob_settings("quantize_base=nf4");
  const RunRecord host =
      run_variant_in_process(quiet_request("train7b", "lora", DeviceKind::host, Scale::tiny, "", nf4));
  const RunRecord dry = run_variant_in_process(quiet_request("train7b", "lora", DeviceKind::dry, Scale::tiny, "", nf4));
  ASSERT_EQ(host.outcome.status, OutcomeStatus::ok) << host.outcome.message;
  EXPECT_EQ(host.memory.peak_allocated, dry.memory.peak_allocated);
  EXPECT_EQ(host.memory.per_tag_peak, dry.memory.per_tag_peak);
}

}  // namespace
}  // namespace oomlab
