#include "scenarios/serve7b/serve7b.hpp"

#include <stdexcept>

#include "harness/memory/size.hpp"
#include "harness/memory/tags.hpp"
#include "harness/runner/run_context.hpp"
#include "scenarios/serve7b/serve7b_knobs.hpp"
#include "scenarios/serve7b/serve_run.hpp"

namespace oomlab::scenarios {

using namespace serve7b;

// Steps are requests served. The tiny budget: 32 MiB of it is the matmul workspace.
Serve7bScenario::Serve7bScenario()
    : DeclaredScenario(
          {"serve7b",
           "LLaMA-7B serving on a 24 GB card: the KV cache fills it; paged blocks, continuous batching and int8 KV fit",
           {
               {kBrokenPadded,
                "static batch of 16, each request's cache reserved for the batch's longest prompt + output",
                Expect::oom},
               {kBrokenGrowing,
                "static batch of 5, each cache grown by concatenation every step: live bytes fit, the reserved do not",
                Expect::oom},
               {kBrokenF32, "weights left in f32: 25 GiB before the first token", Expect::oom},
               {kFixedHalf, "bf16 weights (model.half()), one request at a time", Expect::ok},
               {kFixedShorter, "static batch of 16 with prompts cut to their last 512 tokens: fits, answers change",
                Expect::ok, true},
               {kFixedPaged, "paged KV blocks, continuous batching, preemption instead of OOM", Expect::ok},
               {kFixedKvInt8, "paged, the cache int8 with a scale per token and head: 32 users", Expect::ok},
           },
           {"36MiB", "60MiB", "rtx4090"},
           {6, 16, 64}}) {}

std::vector<KnobSpec> Serve7bScenario::knobs() const { return knob_specs(); }

std::map<std::string, std::string> Serve7bScenario::variant_knobs(const std::string& variant, Scale scale) const {
  return knob_values(variant, scale);
}

void Serve7bScenario::check_knobs(const std::string& variant, Scale scale, const KnobValues& knobs) const {
  (void)variant;
  make_plan(knobs, default_steps(scale));
}

void Serve7bScenario::check_device(const std::string& variant, Scale scale, DeviceKind device,
                                   const KnobValues& knobs) const {
  (void)variant;
  if (device != DeviceKind::cuda) return;
  const auto plan = make_plan(knobs, default_steps(scale));
  const std::int64_t dim = plan.engine.config.head_dim();
  if (dim != 64 && dim != 128) {  // the fused prefill kernel's sizes (and the decode's multiple of 32)
    throw NotOnThisDevice("serve7b on cuda needs head_dim 64 or 128 (fused prefill attention); " +
                          plan.engine.config.name + " has " + std::to_string(dim));
  }
}

void Serve7bScenario::run(const std::string& variant, RunContext& context) const {
  const serve::ServePlan plan = make_plan(knobs_of(variant, context), context.steps());
  const serve::ServeOutcome out = serve::serve(plan, context.device(), &context);
  const memory::MemoryStats& stats = context.allocator().stats();
  context.set_metric("generated_tokens", static_cast<double>(out.generated));
  context.set_metric("schedule_steps", out.steps);
  context.set_metric("preemptions", out.preemptions);
  context.set_metric("max_running", out.max_running);
  context.set_metric("kv_blocks", static_cast<double>(out.total_blocks));
  context.set_metric("kv_peak_bytes", static_cast<double>(out.kv_peak_bytes));
  context.set_metric("weights_bytes", static_cast<double>(out.weight_bytes));
  // The KV cache's share of the peak: its own peak (Tag::data) over the allocator's.
  if (stats.allocated.peak > 0) {
    context.set_metric("kv_share_of_peak", static_cast<double>(stats.tag(memory::Tag::data).peak) /
                                               static_cast<double>(stats.allocated.peak));
  }
  context.set_metric("ttft_p50_seconds", serve::percentile(out.time_to_first_token, 50));
  context.set_metric("ttft_p99_seconds", serve::percentile(out.time_to_first_token, 99));
  context.set_metric("tpot_p50_seconds", serve::percentile(out.time_per_output_token, 50));
  context.set_metric("tpot_p99_seconds", serve::percentile(out.time_per_output_token, 99));
  if (out.decode_only_seconds > 0.0) {  // decode steps alone, as Hugging Face's decode is timed
    context.set_metric("decode_tokens_per_second", static_cast<double>(out.decode_only_tokens) / out.decode_only_seconds);
  }
  context.note("served " + std::to_string(plan.workload.requests) + " requests in " + std::to_string(out.steps) +
               " steps: " + std::to_string(out.generated) + " tokens, KV peak " +
               format_size(out.kv_peak_bytes) + ", " + std::to_string(out.preemptions) + " preemptions");
}

OOMLAB_REGISTER_SCENARIO(Serve7bScenario);

}  // namespace oomlab::scenarios
