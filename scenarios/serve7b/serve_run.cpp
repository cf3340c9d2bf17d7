#include "scenarios/serve7b/serve_run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "harness/memory/alloc_rounding.hpp"
#include "harness/runner/run_context.hpp"
#include "kernels/core/check.hpp"

namespace oomlab::serve {
namespace {

// Left between the paged pool and the budget for what the profiling pass did not see (the block
// tables, the decode's split partials, small-pool segments), at least.
constexpr std::size_t kPoolMargin = 2 * memory::kLargeBuffer;

// vLLM's sizing: weights loaded and one prefill of max_batch_tokens run, the rest of the budget is
// blocks. Never more than the workload can use at this concurrency, never fewer than one request
// needs (so an impossible budget runs out of memory in the allocator, as it would on the card).
std::int64_t paged_pool_blocks(const ServePlan& plan, ServeEngine& engine, Device& device,
                               const std::vector<Request>& requests, const SchedulerSpec& spec,
                               std::size_t& reserved_before_pool) {
  const Scheduler sizes(SchedulerSpec{CacheKind::padded, 1, spec.block_tokens, 0, 0}, requests);
  std::int64_t longest = 1;
  for (const Request& r : requests) longest = std::max(longest, sizes.blocks_for(r.max_context()));
  const std::int64_t useful =
      longest * std::min<std::int64_t>(plan.concurrency, static_cast<std::int64_t>(requests.size()));
  const std::size_t budget = device.allocator().config().budget;
  if (budget == memory::AllocatorConfig::kUnlimited) return useful;
  const auto weights = static_cast<std::size_t>(device.allocator().stats().reserved.current);
  std::vector<std::int32_t> profile(static_cast<std::size_t>(plan.max_batch_tokens), 0);
  engine.prefill(-1, profile, false);
  const auto reserved = static_cast<std::size_t>(device.allocator().stats().reserved.current);
  reserved_before_pool = reserved;
  // Blocks and prefill temporaries of every length share the allocator's large pool, so a freed
  // block may be split for a temporary and the temporaries' cached segments fragment: the pool
  // leaves the profiled activations' reserve a second time, as headroom.
  const std::size_t margin = std::max(kPoolMargin, reserved - weights);
  const std::size_t free = budget > reserved + margin ? budget - reserved - margin : 0;
  const auto fit = static_cast<std::int64_t>(free / engine.block_reserved_bytes());
  return std::max(longest, std::min(fit, useful));
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

ServeOutcome serve(const ServePlan& plan, Device& device, RunContext* context) {
  const std::vector<Request> requests = make_workload(plan.workload, true);
  ServeEngine engine(device, plan.engine, plan.model_seed);
  // The weights' f32 init staging goes back to the device, as a server's loader leaves it: what
  // is reserved from here on is the weights and what serving itself asks for.
  device.allocator().empty_cache();
  ServeOutcome outcome;
  outcome.weight_bytes = engine.weight_bytes();
  outcome.tokens.resize(requests.size());

  SchedulerSpec spec{plan.engine.cache, plan.concurrency, plan.engine.block_tokens, 0, plan.max_batch_tokens};
  if (spec.kind == CacheKind::paged) {
    spec.total_blocks = paged_pool_blocks(plan, engine, device, requests, spec, outcome.reserved_before_pool);
    outcome.block_reserved_bytes = engine.block_reserved_bytes();
  }
  outcome.total_blocks = spec.total_blocks;
  Scheduler scheduler(spec, requests);

  std::vector<int> batch;  // the static batch running now (padded, growing)
  std::vector<double> first_token_time(requests.size(), 0.0), finish_time(requests.size(), 0.0);
  double now = 0.0;
  for (int index = 0; !scheduler.done(); ++index) {
    const auto started = std::chrono::steady_clock::now();
    const double step_began = now;
    if (context) context->begin_step(index);
    const Step step = scheduler.next();
    for (int r : step.preempted) engine.release(r);
    if (!step.batch.empty()) {
      batch = step.batch;
      if (spec.kind == CacheKind::padded) {
        int longest = 1;
        for (int r : batch) longest = std::max(longest, requests[static_cast<std::size_t>(r)].max_context());
        engine.begin_static_batch(batch, longest);
      }
    }
    std::int64_t made = 0;
    for (int r : step.prefill) {
      const Request& request = requests[static_cast<std::size_t>(r)];
      std::vector<std::int32_t> tokens = request.prompt_tokens;
      auto& out = outcome.tokens[static_cast<std::size_t>(r)];
      tokens.insert(tokens.end(), out.begin(), out.end());  // a preempted sequence recomputes what it made
      if (spec.kind != CacheKind::padded) engine.ensure_slots(r, static_cast<int>(tokens.size()));
      out.push_back(engine.prefill(r, tokens));
      ++made;
    }
    if (!step.decode.empty()) {
      std::vector<std::int32_t> last;
      std::vector<int> contexts;
      for (int r : step.decode) {
        const auto& out = outcome.tokens[static_cast<std::size_t>(r)];
        last.push_back(out.back());
        contexts.push_back(requests[static_cast<std::size_t>(r)].prompt + static_cast<int>(out.size()));
      }
      if (spec.kind == CacheKind::growing) {
        // Every member of the static batch grows, the finished ones too (generate() keeps them in
        // the batch, making padding, until its longest request ends).
        for (int r : batch) engine.ensure_slots(r, static_cast<int>(engine.capacity(r)) + 1);
      } else if (spec.kind == CacheKind::paged) {
        for (std::size_t i = 0; i < step.decode.size(); ++i) engine.ensure_slots(step.decode[i], contexts[i]);
      }
      const auto next = engine.decode(step.decode, last, contexts);
      for (std::size_t i = 0; i < step.decode.size(); ++i)
        outcome.tokens[static_cast<std::size_t>(step.decode[i])].push_back(next[i]);
      made += static_cast<std::int64_t>(step.decode.size());
    }
    if (spec.kind == CacheKind::paged) {
      for (int r : step.finished) engine.release(r);  // THE FIX: blocks back the step a request ends
      for (int r : step.decode) {
        OOMLAB_CHECK(scheduler.blocks_held(r) == engine.blocks_held(r) || scheduler.generated(r) ==
                         requests[static_cast<std::size_t>(r)].output,
                     "serve7b: scheduler and cache disagree on request " << r << "'s blocks");
      }
    } else if (!batch.empty() && std::all_of(batch.begin(), batch.end(), [&](int r) {
                 return scheduler.generated(r) == requests[static_cast<std::size_t>(r)].output;
               })) {
      engine.end_static_batch();
      batch.clear();
    }
    outcome.kv_peak_bytes = std::max(outcome.kv_peak_bytes, engine.kv_bytes());
    outcome.generated += made;
    int running = static_cast<int>(step.prefill.size() + step.decode.size());
    outcome.max_running = std::max(outcome.max_running, running);
    if (context) {
      context->add_work(static_cast<double>(made), "tokens/s");
      context->end_step();
      now += context->step_seconds().back();
    } else {
      device.synchronize();
      now += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    }
    if (step.prefill.empty() && made > 0) {
      outcome.decode_only_tokens += made;
      outcome.decode_only_seconds += now - step_began;
    }
    for (int r : step.prefill) {
      if (outcome.tokens[static_cast<std::size_t>(r)].size() == 1) first_token_time[static_cast<std::size_t>(r)] = now;
    }
    for (int r : step.finished) finish_time[static_cast<std::size_t>(r)] = now;
    ++outcome.steps;
  }
  outcome.preemptions = scheduler.preemptions();
  for (const Request& r : requests) {
    outcome.time_to_first_token.push_back(first_token_time[static_cast<std::size_t>(r.id)]);
    if (r.output > 1) {
      outcome.time_per_output_token.push_back((finish_time[static_cast<std::size_t>(r.id)] -
                                               first_token_time[static_cast<std::size_t>(r.id)]) / (r.output - 1));
    }
  }
  return outcome;
}

}  // namespace oomlab::serve
