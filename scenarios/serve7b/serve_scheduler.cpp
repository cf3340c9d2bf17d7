#include "scenarios/serve7b/serve_scheduler.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace oomlab::serve {

const char* cache_kind_name(CacheKind kind) {
  switch (kind) {
    case CacheKind::padded: return "padded";
    case CacheKind::growing: return "growing";
    case CacheKind::paged: return "paged";
  }
  return "?";
}

Scheduler::Scheduler(const SchedulerSpec& spec, const std::vector<Request>& requests)
    : spec_(spec), requests_(requests), state_(requests.size()), free_blocks_(spec.total_blocks) {
  if (spec.concurrency < 1) throw std::invalid_argument("serve7b: concurrency must be at least 1");
  for (const Request& r : requests_) {
    if (r.id != static_cast<int>(&r - requests_.data()))
      throw std::invalid_argument("serve7b: request ids must be 0..n-1");
  }
  if (spec.kind == CacheKind::paged) {
    if (spec.block_tokens < 1) throw std::invalid_argument("serve7b: block_tokens must be at least 1");
    for (const Request& r : requests_) {
      if (blocks_for(r.max_context()) > spec.total_blocks) {
        throw std::invalid_argument("serve7b: request " + std::to_string(r.id) + " alone needs " +
                                    std::to_string(blocks_for(r.max_context())) + " blocks; the cache holds " +
                                    std::to_string(spec.total_blocks));
      }
    }
  }
  for (const Request& r : requests_) waiting_.push_back(r.id);
}

int Scheduler::context_after_step(int request) const {
  return requests_[static_cast<std::size_t>(request)].prompt + generated(request);
}

Step Scheduler::next() {
  if (done()) throw std::logic_error("serve7b: the schedule is over");
  Step step = spec_.kind == CacheKind::paged ? next_paged() : next_static();
  finish_step(step);
  return step;
}

Step Scheduler::next_static() {
  Step step;
  if (running_.empty()) {  // a new static batch: the next `concurrency` requests, prefilled together
    for (int i = 0; i < spec_.concurrency && !waiting_.empty(); ++i) {
      const int r = waiting_.front();
      waiting_.erase(waiting_.begin());
      running_.push_back(r);
      state_[static_cast<std::size_t>(r)].running = true;
      step.batch.push_back(r);
      step.prefill.push_back(r);
    }
    return step;
  }
  for (int r : running_) {
    if (generated(r) < requests_[static_cast<std::size_t>(r)].output) step.decode.push_back(r);
  }
  return step;
}

Step Scheduler::next_paged() {
  Step step;
  // Every running sequence decodes; one whose last block is full takes a new one, preempting the
  // most recently admitted sequences (itself last) while none is free.
  for (std::size_t i = 0; i < running_.size();) {
    const int r = running_[i];
    State& s = state_[static_cast<std::size_t>(r)];
    const std::int64_t need = blocks_for(context_after_step(r)) - s.blocks;
    while (need > free_blocks_) {
      const int victim = running_.back();
      State& v = state_[static_cast<std::size_t>(victim)];
      free_blocks_ += v.blocks;
      v.blocks = 0;
      v.running = false;
      running_.pop_back();
      waiting_.insert(waiting_.begin(), victim);
      step.preempted.push_back(victim);
      ++preemptions_;
      if (victim == r) break;
    }
    if (!s.running) break;  // r preempted itself: everything after it is gone too
    s.blocks += need;
    free_blocks_ -= need;
    step.decode.push_back(r);
    ++i;
  }
  // Admission, first come first served, only in a step that preempted nobody (vLLM's rule: the
  // preempted go first once memory is back).
  if (step.preempted.empty()) {
    int prefill_tokens = 0;
    while (!waiting_.empty() && static_cast<int>(running_.size()) < spec_.concurrency) {
      const int r = waiting_.front();
      const int tokens = context_after_step(r);
      const std::int64_t need = blocks_for(tokens);
      if (need > free_blocks_) break;
      if (prefill_tokens > 0 && prefill_tokens + tokens > spec_.max_batch_tokens) break;
      waiting_.erase(waiting_.begin());
      State& s = state_[static_cast<std::size_t>(r)];
      s.blocks = need;
      s.running = true;
      free_blocks_ -= need;
      prefill_tokens += tokens;
      running_.push_back(r);
      step.prefill.push_back(r);
    }
  }
  return step;
}

void Scheduler::finish_step(Step& step) {
  auto advance = [&](int r) {
    State& s = state_[static_cast<std::size_t>(r)];
    if (++s.generated == requests_[static_cast<std::size_t>(r)].output) step.finished.push_back(r);
  };
  for (int r : step.prefill) advance(r);
  for (int r : step.decode) advance(r);
  if (step.finished.empty()) return;
  finished_ += static_cast<int>(step.finished.size());
  if (spec_.kind == CacheKind::paged) {  // released at once
    for (int r : step.finished) {
      State& s = state_[static_cast<std::size_t>(r)];
      free_blocks_ += s.blocks;
      s.blocks = 0;
      s.running = false;
      running_.erase(std::find(running_.begin(), running_.end(), r));
    }
    return;
  }
  // A static batch ends when its last sequence does; until then finished ones idle in it.
  const bool batch_done = std::all_of(running_.begin(), running_.end(), [&](int r) {
    return generated(r) == requests_[static_cast<std::size_t>(r)].output;
  });
  if (batch_done) {
    for (int r : running_) state_[static_cast<std::size_t>(r)].running = false;
    running_.clear();
  }
}

std::vector<Step> schedule(const SchedulerSpec& spec, const std::vector<Request>& requests) {
  Scheduler scheduler(spec, requests);
  std::vector<Step> steps;
  while (!scheduler.done()) steps.push_back(scheduler.next());
  return steps;
}

}  // namespace oomlab::serve
