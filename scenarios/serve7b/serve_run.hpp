// Serving a workload to completion: the scheduler decides each step from lengths, the engine
// computes it and keeps the KV cache as the cache kind says. One RunContext step per scheduler
// step, so the record's step times are the schedule's, and the latencies below come from them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "scenarios/serve7b/serve_engine.hpp"
#include "scenarios/serve7b/serve_scheduler.hpp"
#include "scenarios/serve7b/serve_workload.hpp"

namespace oomlab {
class RunContext;
}

namespace oomlab::serve {

struct ServePlan {
  EngineOptions engine;
  WorkloadSpec workload;
  int concurrency = 1;
  int max_batch_tokens = 0;     // paged: prefill tokens per step; also the profiling pass's length
  std::uint32_t model_seed = 0;
};

struct ServeOutcome {
  std::vector<std::vector<std::int32_t>> tokens;  // per request, the tokens it made (0s on dry)
  int steps = 0;
  int preemptions = 0;
  int max_running = 0;
  std::int64_t total_blocks = 0;  // paged: what the budget held after the weights and a profiling pass
  std::size_t reserved_before_pool = 0;  // paged under a budget: reserved bytes when the pool was sized
  std::size_t block_reserved_bytes = 0;  // paged: what one block costs the allocator
  std::size_t kv_peak_bytes = 0;
  std::size_t weight_bytes = 0;
  std::int64_t generated = 0;
  // Per request, from the steps' measured times (every request arrives at 0).
  std::vector<double> time_to_first_token;
  std::vector<double> time_per_output_token;  // requests that made more than one token
  // Steps that only decode (no prefill in them): the tokens they made and their time. Their ratio
  // is the decode rate as peers.py times Hugging Face's generate (prefill timed apart); the
  // per-token latency above also counts the waits behind other requests' prefills.
  std::int64_t decode_only_tokens = 0;
  double decode_only_seconds = 0.0;
};

// Throws memory::OomError when the variant runs out (and std::invalid_argument for a plan with no
// meaning). `context` times the steps and receives the metrics (nullptr: untimed, tests).
ServeOutcome serve(const ServePlan& plan, Device& device, RunContext* context);

// Nearest-rank percentile (p in [0, 100]) of values; 0 for none.
double percentile(std::vector<double> values, double p);

}  // namespace oomlab::serve
