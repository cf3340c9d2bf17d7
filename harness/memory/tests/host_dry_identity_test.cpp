// The same program on host and on dry gives the same allocator event sequence: dry predicts
// host (and cuda) exactly at allocator level.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "harness/memory/caching_allocator.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory {
namespace {
using namespace oomlab::literals;

// A small training-loop-like program: long-lived weights, per-step activations of varying size,
// a large request near the end, and cache releases at phase boundaries.
void run_program(CachingAllocator& allocator) {
  std::mt19937_64 rng(1234);
  std::vector<void*> weights;
  for (int i = 0; i < 6; ++i) weights.push_back(allocator.allocate((i + 1) * 3_MiB + 100, Tag::weights, 0));
  for (int step = 0; step < 20; ++step) {
    allocator.mark_step(step);
    std::vector<void*> activations;
    for (int i = 0; i < 12; ++i) {
      std::size_t bytes = 1 + rng() % (i % 3 == 0 ? 24_MiB : 600_KiB);
      try {
        activations.push_back(allocator.allocate(bytes, Tag::activations, 0));
      } catch (const OomError&) {
      }
    }
    for (std::size_t i = 0; i < activations.size(); i += 2) allocator.deallocate(activations[i]);
    for (std::size_t i = 1; i < activations.size(); i += 2) allocator.deallocate(activations[i]);
    if (step % 7 == 6) allocator.empty_cache();
  }
  try {
    allocator.deallocate(allocator.allocate(90_MiB, Tag::workspace, 0));
  } catch (const OomError&) {
  }
  for (void* w : weights) allocator.deallocate(w);
  allocator.empty_cache();
}

void expect_identical(AllocatorConfig config) {
  auto host = make_host_source();
  auto dry = make_dry_source();
  CachingAllocator on_host(*host, config);
  CachingAllocator on_dry(*dry, config);
  run_program(on_host);
  run_program(on_dry);
  const auto& a = on_host.trace().events();
  const auto& b = on_dry.trace().events();
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GT(a.size(), 100u);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].same_as(b[i])) << "event " << i << ": host " << event_kind_name(a[i].kind) << " seg "
                                    << a[i].segment << "+" << a[i].offset << " vs dry "
                                    << event_kind_name(b[i].kind) << " seg " << b[i].segment << "+"
                                    << b[i].offset;
  }
  EXPECT_EQ(on_host.stats().num_ooms, on_dry.stats().num_ooms);
}

TEST(HostDryIdentity, DefaultSettings) { expect_identical(AllocatorConfig{}); }

TEST(HostDryIdentity, TightBudgetWithOoms) {
  AllocatorConfig config;
  config.budget = 100_MiB;
  expect_identical(config);
}

TEST(HostDryIdentity, MaxSplitSize) {
  AllocatorConfig config;
  config.max_split_size = 20_MiB;
  config.budget = 160_MiB;
  expect_identical(config);
}

TEST(HostDryIdentity, ExpandableSegments) {
  AllocatorConfig config;
  config.expandable_segments = true;
  config.budget = 100_MiB;
  expect_identical(config);
}

}  // namespace
}  // namespace oomlab::memory
