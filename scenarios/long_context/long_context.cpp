#include "scenarios/long_context/long_context.hpp"

#include <stdexcept>

namespace oomlab::scenarios {
namespace {

const char* const kBroken = "broken";
const char* const kFixed = "fixed";

}  // namespace

TrainingPlan long_context_plan(const std::string& variant, Scale scale) {
  TrainingPlan plan;
  switch (scale) {
    case Scale::tiny:
      plan.config = model::with_max_seq(model::transformer_preset("gpt2-tiny"), 512);
      plan.seq = 512;
      plan.micro_batch = 2;
      break;
    case Scale::small:
      plan.config = model::with_max_seq(model::transformer_preset("gpt2-small"), 2048);
      plan.seq = 2048;
      plan.micro_batch = 4;
      break;
    case Scale::full:
      plan.config = model::with_max_seq(model::transformer_preset("gpt2-124m"), 4096);
      plan.seq = 4096;
      plan.micro_batch = 4;
      break;
  }
  plan.options.precision = model::Precision::bf16;
  if (variant == kBroken) {
    plan.options.attention = model::AttentionKind::naive;  // T x T scores, kept per layer
  } else if (variant == kFixed) {
    plan.options.attention = model::AttentionKind::fused;  // THE FIX: no T x T buffer at all
  } else {
    throw std::invalid_argument("long_context: unknown variant '" + variant + "'");
  }
  return plan;
}

LongContextScenario::LongContextScenario()
    : TrainingScenario(
          {"long_context",
           "GPT-2 124M at T=4096: naive attention's T x T scores fill an A100-40GB; fused attention fits",
           {
               {kBroken, "naive attention: (B, H, T, T) f32 probabilities kept for every layer", Expect::oom},
               {kFixed, "fused flash-style attention: output and logsumexp only, linear in T", Expect::ok},
           },
           {"50MiB", "1GiB", "a100-40g"},
           {2, 3, 3}}) {}

OOMLAB_REGISTER_SCENARIO(LongContextScenario);

}  // namespace oomlab::scenarios
