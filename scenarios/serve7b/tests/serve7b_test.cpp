// serve7b on host (tiny: real math on the CPU references) and dry (every scale): every way of
// serving makes the same greedy tokens for the same requests, except the truncated prompts; host
// and dry make the same allocations; at full scale on dry the story holds on a 24 GB card.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <tuple>

#include <gtest/gtest.h>

#include "harness/memory/alloc_rounding.hpp"
#include "harness/memory/tags.hpp"
#include "harness/runner/temp_directory.hpp"
#include "harness/testing/run_scenario.hpp"
#include "scenarios/serve7b/serve7b_knobs.hpp"
#include "scenarios/serve7b/serve_run.hpp"

namespace oomlab {
namespace {

using scenarios::serve7b::knob_values;
using scenarios::serve7b::make_plan;
using testing::run_scenario;

// The tiny story's variants with short requests, so the numerics run in a second on the CPU.
serve::ServePlan tiny_plan(const std::string& variant, int requests = 6) {
  auto values = knob_values(variant, Scale::tiny);
  values["prompt_min"] = "8";
  values["prompt_max"] = "48";
  values["output_min"] = "2";
  values["output_max"] = "12";
  values["max_batch_tokens"] = "64";
  values["block_tokens"] = "4";
  if (values["truncate_prompt"] != "0") values["truncate_prompt"] = "6";
  return make_plan(KnobValues(values), requests);
}

serve::ServeOutcome serve_on_host(const serve::ServePlan& plan,
                                  std::size_t budget = memory::AllocatorConfig::kUnlimited) {
  memory::AllocatorConfig config;
  config.budget = budget;
  Device device(DeviceKind::host, config);
  return serve::serve(plan, device, nullptr);
}

// --set model= takes a preset or a LLaMA-style config.json (or its folder; the record keeps
// path#Architecture); a GPT-2 model, preset or file, is refused in one line.
TEST(Serve7bKnobs, AModelIsAPresetOrALlamaStyleConfigJson) {
  TempDirectory dir("oomlab-serve7b-test");
  std::filesystem::create_directory(dir.path() + "/mistral");
  std::ofstream(dir.path() + "/mistral/config.json")
      << R"({"architectures": ["MistralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
             "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
             "vocab_size": 32000, "rope_theta": 10000.0, "tie_word_embeddings": false})";
  std::ofstream(dir.path() + "/gpt2.json")
      << R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 768, "n_layer": 12, "n_head": 12,
             "n_positions": 1024, "vocab_size": 50257})";
  const Scenario* scenario = ScenarioRegistry::instance().find("serve7b");
  ASSERT_NE(scenario, nullptr);
  auto resolve = [&](const std::string& model) {
    return resolve_knobs("serve7b", scenario->knobs(), scenario->variant_knobs("fixed-paged", Scale::full),
                         {{"model", model}});
  };
  const KnobValues mistral = resolve(dir.path() + "/mistral");
  EXPECT_NE(mistral.text("model").find("config.json#MistralForCausalLM"), std::string::npos) << mistral.text("model");
  EXPECT_EQ(make_plan(mistral, 4).engine.config.kv_head_count(), 8);
  EXPECT_EQ(make_plan(resolve("llama-3-8b"), 4).engine.config.kv_head_count(), 8);
  EXPECT_THROW(resolve(dir.path() + "/gpt2.json"), std::invalid_argument);
  EXPECT_THROW(resolve("gpt2-124m"), std::invalid_argument);
}

TEST(Serve7bOnHost, EveryWayOfServingMakesTheSameTokens) {
  const auto paged = serve_on_host(tiny_plan(scenarios::serve7b::kFixedPaged));
  ASSERT_EQ(paged.tokens.size(), 6u);
  for (const char* variant : {scenarios::serve7b::kBrokenPadded, scenarios::serve7b::kBrokenGrowing,
                              scenarios::serve7b::kFixedHalf}) {
    EXPECT_EQ(serve_on_host(tiny_plan(variant)).tokens, paged.tokens) << variant;
  }
  // Ties broken alike is not enough: the tokens must depend on the request.
  EXPECT_NE(paged.tokens[0], paged.tokens[1]);
}

// The decode rate peers.py's Hugging Face figure is set against: steps that only decode. One
// request at a time, every token but each request's first (its prefill's) is made by one.
TEST(Serve7bOnHost, DecodeOnlyStepsCountEveryTokenButThePrefills) {
  const auto one_at_a_time = serve_on_host(tiny_plan(scenarios::serve7b::kFixedHalf));
  const auto requests = static_cast<std::int64_t>(one_at_a_time.tokens.size());
  EXPECT_EQ(one_at_a_time.decode_only_tokens, one_at_a_time.generated - requests);
  EXPECT_GT(one_at_a_time.decode_only_seconds, 0.0);
  const auto paged = serve_on_host(tiny_plan(scenarios::serve7b::kFixedPaged));
  EXPECT_LE(paged.decode_only_tokens, paged.generated - requests);  // prefill steps may carry decodes
}

// A pool of a few blocks preempts; the recomputed requests still make the same tokens.
TEST(Serve7bOnHost, PreemptionRecomputesTheSameTokens) {
  auto plan = tiny_plan(scenarios::serve7b::kFixedPaged, 8);
  plan.concurrency = 6;
  const auto plenty = serve_on_host(plan);
  EXPECT_EQ(plenty.preemptions, 0);
  // The pool is what the budget leaves after the weights and a profiling prefill (plus a margin):
  // measured on dry under a budget too large to bind, then set a dozen blocks above it.
  memory::AllocatorConfig large;
  large.budget = std::size_t{1} << 40;
  Device probe(DeviceKind::dry, large);
  const auto sized = serve::serve(plan, probe, nullptr);
  const std::size_t budget = sized.reserved_before_pool + 2 * memory::kLargeBuffer + 12 * sized.block_reserved_bytes;
  const auto tight = serve_on_host(plan, budget);
  EXPECT_EQ(tight.total_blocks, 12);
  EXPECT_GT(tight.preemptions, 0);
  EXPECT_EQ(tight.tokens, plenty.tokens);
}

TEST(Serve7bOnHost, AnInt8CacheMakesNearlyTheSameTokensAndShorterInputsDoNot) {
  const auto paged = serve_on_host(tiny_plan(scenarios::serve7b::kFixedPaged));
  const auto int8 = serve_on_host(tiny_plan(scenarios::serve7b::kFixedKvInt8));
  const auto shorter = serve_on_host(tiny_plan(scenarios::serve7b::kFixedShorter));
  const auto f32 = serve_on_host(tiny_plan(scenarios::serve7b::kBrokenF32));
  auto agreement = [&](const serve::ServeOutcome& other) {
    int same = 0, all = 0;
    for (std::size_t r = 0; r < paged.tokens.size(); ++r) {
      for (std::size_t i = 0; i < paged.tokens[r].size(); ++i, ++all) same += paged.tokens[r][i] == other.tokens[r][i];
    }
    return static_cast<double>(same) / all;
  };
  // int8 keys and values move the logits a little; where the top two are close a token flips, and
  // greedy decoding follows its own output from there: 86% of the tokens agree here.
  std::printf("tokens agreeing with fixed-paged: int8 %.2f, f32 weights %.2f, shorter input %.2f\n", agreement(int8),
              agreement(f32), agreement(shorter));
  EXPECT_GE(agreement(int8), 0.75);
  // f32 weights are another model than their bf16 rounding: its greedy tokens differ where the top
  // two logits are close (86% agree at this tiny scale, vocab 64); the README says so.
  EXPECT_GE(agreement(f32), 0.5);
  EXPECT_LT(agreement(shorter), 0.9);  // the model saw other prompts: other answers
}

TEST(Serve7bOnHost, HostAndDryMakeTheSameAllocations) {
  for (const char* variant : {scenarios::serve7b::kFixedPaged, scenarios::serve7b::kBrokenGrowing,
                              scenarios::serve7b::kBrokenPadded}) {
    const auto host = run_scenario("serve7b", variant, DeviceKind::host, Scale::tiny, "1GiB", 3);
    const auto dry = run_scenario("serve7b", variant, DeviceKind::dry, Scale::tiny, "1GiB", 3);
    ASSERT_EQ(host.events.size(), dry.events.size()) << variant;
    for (std::size_t i = 0; i < host.events.size(); ++i) {
      ASSERT_TRUE(host.events[i].same_as(dry.events[i])) << variant << " event " << i;
    }
    EXPECT_GT(host.metrics.at("generated_tokens"), 0);
  }
}


// The story at small and full scale on dry (full: LLaMA-7B, 64 requests, prompts 128..4096, outputs
// 32..512, an RTX 4090's budget; tiny is run on host by the suite): each variant ends as it says.
class Serve7bStoryOnDry : public ::testing::TestWithParam<std::tuple<Scale, const char*>> {};

TEST_P(Serve7bStoryOnDry, EndsAsTheStorySays) {
  const auto [scale, name] = GetParam();
  const std::string variant = name;
  const Scenario* scenario = ScenarioRegistry::instance().find("serve7b");
  Expect expected = Expect::ok;
  for (const VariantSpec& v : scenario->variants()) {
    if (v.name == variant) expected = v.expected;
  }
  const auto outcome = run_scenario("serve7b", variant, DeviceKind::dry, scale);
  ASSERT_EQ(outcome.oom.has_value(), expected == Expect::oom) << variant;
  if (variant == scenarios::serve7b::kBrokenGrowing) {
    // Live bytes fit; the cache's ever-new sizes leave no free block the next one fits.
    EXPECT_LT(outcome.oom->allocated + outcome.oom->requested, outcome.oom->budget);
    EXPECT_LT(outcome.oom->largest_free_block, outcome.oom->requested);
  }
  if (scale == Scale::full && variant == scenarios::serve7b::kBrokenF32) {
    EXPECT_EQ(outcome.oom->tag, memory::Tag::weights);
  }
  if (scale == Scale::full && variant == scenarios::serve7b::kBrokenPadded) {
    EXPECT_EQ(outcome.oom->tag, memory::Tag::data);
  }
  if (expected == Expect::ok) {
    EXPECT_GT(outcome.metrics.at("kv_share_of_peak"), 0.0);
    EXPECT_GT(outcome.metrics.at("generated_tokens"), 0.0);
  }
}

std::string story_name(const ::testing::TestParamInfo<std::tuple<Scale, const char*>>& info) {
  std::string name = std::string(scale_name(std::get<0>(info.param))) + "_" + std::get<1>(info.param);
  for (char& c : name) c = c == '-' ? '_' : c;
  return name;
}

INSTANTIATE_TEST_SUITE_P(Variants, Serve7bStoryOnDry,
                         ::testing::Combine(::testing::Values(Scale::small, Scale::full),
                                            ::testing::Values("broken-f32", "broken-padded", "broken-growing-cache",
                                                              "fixed-half", "fixed-shorter-input", "fixed-paged",
                                                              "fixed-kv-int8")),
                         story_name);

// At full scale the paged cache runs more users at once than the growing cache's batch of 5 (up to
// the blocks the budget holds), and int8 blocks hold more tokens than bf16 blocks in that budget.
TEST(Serve7bFullOnDry, PagedServesTheStoryAndInt8HoldsMoreTokens) {
  const auto paged = run_scenario("serve7b", "fixed-paged", DeviceKind::dry, Scale::full);
  const auto int8 = run_scenario("serve7b", "fixed-kv-int8", DeviceKind::dry, Scale::full);
  ASSERT_FALSE(paged.oom || int8.oom);
  EXPECT_GE(paged.metrics.at("max_running"), 12);
  EXPECT_GT(paged.metrics.at("preemptions"), 0);
  const double bf16_tokens = paged.metrics.at("kv_blocks") * 32, int8_tokens = int8.metrics.at("kv_blocks") * 64;
  EXPECT_GT(int8_tokens, 1.7 * bf16_tokens);
  // Reserved stays close to allocated: blocks are one size, reused as sequences come and go.
  EXPECT_LT(paged.stats.reserved.peak - paged.stats.allocated.peak, std::int64_t{1} << 30);
}

}  // namespace
}  // namespace oomlab
