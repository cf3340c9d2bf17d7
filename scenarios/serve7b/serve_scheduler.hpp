// Who runs in each step of serving, decided from lengths alone (never from values), so dry plans
// the same schedule a GPU runs. Three ways a server batches and keeps its KV cache:
//
//   padded   static batches of `concurrency` requests, served to the last one's end; the batch's
//            cache is reserved up front for its longest prompt + output, for every request.
//   growing  static batches too, each sequence's cache grown by one token a step by concatenation
//            (allocate one slot longer, copy, free the old): what a torch.cat cache does.
//   paged    continuous batching over a block-paged cache (vLLM's scheduler): a request is admitted
//            while free blocks last (and the step's prefill tokens stay within max_batch_tokens),
//            takes a block when its last one fills, releases its blocks the step it finishes; when
//            a running sequence needs a block and none is free, the most recently admitted one is
//            preempted (its blocks released, recomputed later from its prompt and the tokens it had
//            made) instead of running out of memory.
//
// A step prefills some sequences (their prompt and any tokens they had made before a preemption:
// one token out) and decodes the others (one token each). After a step a sequence with g tokens
// made before it holds prompt + g slots of cache.
#pragma once
#include <cstdint>
#include <vector>

#include "scenarios/serve7b/serve_workload.hpp"

namespace oomlab::serve {

enum class CacheKind { padded, growing, paged };
const char* cache_kind_name(CacheKind kind);

struct SchedulerSpec {
  CacheKind kind = CacheKind::paged;
  int concurrency = 1;          // sequences running at once, at most
  int block_tokens = 16;        // paged
  std::int64_t total_blocks = 0;  // paged: blocks the cache may hold (from the budget)
  int max_batch_tokens = 0;     // paged: prefill tokens per step (a lone prefill may exceed it)
};

struct Step {
  std::vector<int> batch;      // padded/growing: a static batch starts with these requests
  std::vector<int> preempted;  // paged: released before this step, to be recomputed
  std::vector<int> prefill;    // compute prompt + made tokens, one token out
  std::vector<int> decode;     // one token each
  std::vector<int> finished;   // done after this step: their cache is released
};

class Scheduler {
 public:
  // Throws std::invalid_argument when a paged cache cannot hold one request of the workload.
  Scheduler(const SchedulerSpec& spec, const std::vector<Request>& requests);
  bool done() const { return finished_ == static_cast<int>(requests_.size()); }
  // The next step; updates the scheduler's view of who holds what.
  Step next();

  // Tokens each request has made, its blocks (paged), and the blocks free now.
  int generated(int request) const { return state_[static_cast<std::size_t>(request)].generated; }
  std::int64_t blocks_held(int request) const { return state_[static_cast<std::size_t>(request)].blocks; }
  std::int64_t free_blocks() const { return free_blocks_; }
  std::int64_t blocks_for(int slots) const { return (slots + spec_.block_tokens - 1) / spec_.block_tokens; }
  // Slots request r's cache holds after the step that makes its next token.
  int context_after_step(int request) const;
  int preemptions() const { return preemptions_; }

 private:
  struct State {
    int generated = 0;
    std::int64_t blocks = 0;
    bool running = false;
  };
  Step next_static();
  Step next_paged();
  void finish_step(Step& step);

  SchedulerSpec spec_;
  std::vector<Request> requests_;
  std::vector<State> state_;
  std::vector<int> waiting_;  // front first
  std::vector<int> running_;  // admission order
  std::int64_t free_blocks_ = 0;
  int next_request_ = 0;
  int finished_ = 0;
  int preemptions_ = 0;
};

// The whole schedule at once (tests, and the plan's summary).
std::vector<Step> schedule(const SchedulerSpec& spec, const std::vector<Request>& requests);

}  // namespace oomlab::serve
