// The serving plan without a device: the workload is seeded and within its ranges; static batches
// run to their longest request; the paged scheduler admits while blocks last, releases at once,
// preempts the newest instead of overcommitting, and every request ends with all its tokens.
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include <gtest/gtest.h>

#include "scenarios/serve7b/serve_run.hpp"
#include "scenarios/serve7b/serve_scheduler.hpp"
#include "scenarios/serve7b/serve_workload.hpp"

namespace oomlab::serve {
namespace {

WorkloadSpec spec_of(int requests, std::uint32_t seed) {
  WorkloadSpec w;
  w.requests = requests;
  w.prompt_min = 10;
  w.prompt_max = 100;
  w.output_min = 1;
  w.output_max = 40;
  w.seed = seed;
  w.vocab = 50;
  return w;
}

TEST(ServeWorkload, SeededWithinItsRangesAndTruncationKeepsTheEnd) {
  const auto a = make_workload(spec_of(50, 3), true), b = make_workload(spec_of(50, 3), false);
  ASSERT_EQ(a.size(), 50u);
  std::set<int> prompts;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt, b[i].prompt);  // tokens or not, the same lengths
    EXPECT_EQ(a[i].output, b[i].output);
    EXPECT_GE(a[i].prompt, 10);
    EXPECT_LE(a[i].prompt, 100);
    EXPECT_GE(a[i].output, 1);
    EXPECT_LE(a[i].output, 40);
    EXPECT_EQ(a[i].prompt_tokens.size(), static_cast<std::size_t>(a[i].prompt));
    for (auto t : a[i].prompt_tokens) EXPECT_TRUE(t >= 0 && t < 50);
    prompts.insert(a[i].prompt);
  }
  EXPECT_GT(prompts.size(), 20u);  // lengths actually vary
  WorkloadSpec cut = spec_of(50, 3);
  cut.truncate_prompt = 16;
  const auto c = make_workload(cut, true);
  for (std::size_t i = 0; i < c.size(); ++i) {
    ASSERT_EQ(c[i].prompt, std::min(16, a[i].prompt));
    EXPECT_TRUE(
        std::equal(c[i].prompt_tokens.begin(), c[i].prompt_tokens.end(), a[i].prompt_tokens.end() - c[i].prompt));
  }
  EXPECT_NE(make_workload(spec_of(50, 4), false)[0].prompt + make_workload(spec_of(50, 4), false)[1].prompt,
            a[0].prompt + a[1].prompt);
  WorkloadSpec bad = spec_of(5, 1);
  bad.prompt_min = 200;
  EXPECT_THROW(make_workload(bad, false), std::invalid_argument);
}

// Every request makes exactly `output` tokens; counts tokens per request from the steps.
void expect_complete(const std::vector<Step>& steps, const std::vector<Request>& requests) {
  std::map<int, int> made, finished;
  for (const Step& s : steps) {
    for (int r : s.prefill) ++made[r];
    for (int r : s.decode) ++made[r];
    for (int r : s.finished) ++finished[r];
  }
  for (const Request& r : requests) {
    EXPECT_EQ(made[r.id], r.output) << "request " << r.id;
    EXPECT_EQ(finished[r.id], 1) << "request " << r.id;
  }
}

TEST(StaticBatches, RunToTheirLongestRequestThenTheNextBatchStarts) {
  const auto requests = make_workload(spec_of(10, 1), false);
  const auto steps = schedule({CacheKind::padded, 4, 16, 0, 0}, requests);
  expect_complete(steps, requests);
  std::vector<std::vector<int>> batches;
  std::size_t batch_start = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].batch.empty()) continue;
    if (!batches.empty()) {  // the previous batch lasted its longest output
      int longest = 0;
      for (int r : batches.back()) longest = std::max(longest, requests[static_cast<std::size_t>(r)].output);
      EXPECT_EQ(static_cast<int>(i - batch_start), longest);
    }
    batches.push_back(steps[i].batch);
    batch_start = i;
  }
  ASSERT_EQ(batches.size(), 3u);  // 4 + 4 + 2
  EXPECT_EQ(batches[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(batches[2], (std::vector<int>{8, 9}));
}

TEST(PagedScheduler, NeverHoldsMoreBlocksThanItHasAndReleasesAtOnce) {
  const auto requests = make_workload(spec_of(40, 2), false);
  const SchedulerSpec spec{CacheKind::paged, 8, 16, 20, 256};  // 20 blocks: 320 tokens for 8 users
  Scheduler scheduler(spec, requests);
  int steps = 0, most_running = 0;
  std::set<int> running;
  while (!scheduler.done()) {
    const Step step = scheduler.next();
    ++steps;
    for (int r : step.preempted) running.erase(r);
    for (int r : step.prefill) running.insert(r);
    std::int64_t held = 0;
    for (int r : running) held += scheduler.blocks_held(r);
    EXPECT_EQ(held + scheduler.free_blocks(), 20);  // blocks are conserved
    EXPECT_GE(scheduler.free_blocks(), 0);
    EXPECT_LE(static_cast<int>(running.size()), 8);
    most_running = std::max(most_running, static_cast<int>(running.size()));
    for (int r : step.finished) {
      EXPECT_EQ(scheduler.blocks_held(r), 0);  // released the step it ends
      running.erase(r);
    }
    for (int r : running) {  // each holds the blocks of its cached tokens: prompt + made - 1
      EXPECT_EQ(scheduler.blocks_held(r), scheduler.blocks_for(scheduler.context_after_step(r) - 1)) << r;
    }
    ASSERT_LT(steps, 100000);
  }
  EXPECT_GT(most_running, 1);
  EXPECT_GT(scheduler.preemptions(), 0);  // 320 tokens do not hold the users admitted as they grow
  expect_complete(schedule(spec, requests), requests);
}

TEST(PagedScheduler, EnoughBlocksMeansNoPreemptionAndFullConcurrency) {
  const auto requests = make_workload(spec_of(20, 5), false);
  const auto steps = schedule({CacheKind::paged, 4, 16, 4 * 9, 1000}, requests);  // 9 blocks hold 139 tokens
  expect_complete(steps, requests);
  std::size_t most = 0;
  for (const Step& s : steps) {
    EXPECT_TRUE(s.preempted.empty());
    most = std::max(most, s.prefill.size() + s.decode.size());
  }
  EXPECT_EQ(most, 4u);
}

TEST(PagedScheduler, PreemptedRequestsRecomputeAndFinish) {
  const auto requests = make_workload(spec_of(12, 7), false);
  const auto steps = schedule({CacheKind::paged, 6, 8, 18, 1000}, requests);  // 18 blocks of 8: tight
  expect_complete(steps, requests);
  int preempted = 0;
  std::set<int> preempted_requests;
  for (const Step& s : steps) {
    for (int r : s.preempted) {
      ++preempted;
      preempted_requests.insert(r);
    }
    if (!s.preempted.empty()) {
      EXPECT_TRUE(s.prefill.empty());  // no admission in a step that preempted
    }
  }
  EXPECT_GT(preempted, 0);
  for (int r : preempted_requests) {  // prefilled again after its preemption
    int prefills = 0;
    for (const Step& s : steps) prefills += static_cast<int>(std::count(s.prefill.begin(), s.prefill.end(), r));
    EXPECT_GE(prefills, 2) << "request " << r;
  }
}

TEST(PagedScheduler, RefusesAPoolThatCannotHoldOneRequest) {
  const auto requests = make_workload(spec_of(3, 1), false);
  EXPECT_THROW(Scheduler({CacheKind::paged, 2, 16, 2, 1000}, requests), std::invalid_argument);
}

TEST(Percentile, NearestRank) {
  EXPECT_EQ(percentile({}, 50), 0.0);
  EXPECT_EQ(percentile({3, 1, 2, 4}, 50), 2.0);
  EXPECT_EQ(percentile({3, 1, 2, 4}, 99), 4.0);
  EXPECT_EQ(percentile({5}, 1), 5.0);
}

}  // namespace
}  // namespace oomlab::serve
