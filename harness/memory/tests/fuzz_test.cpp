// Seeded fuzz: random alloc/free/empty_cache/record_stream operations on a small budget (so OOMs
// and retries happen), for each allocator setting (plain, max_split_size, expandable segments).
// After every operation the statistics are checked against a shadow count kept here, and live
// blocks for overlap; every kFullCheckEvery operations the allocator walks its own structure
// (check_consistency: blocks tile segments, free neighbours coalesced, pools and statistics
// agree with the blocks). At the end everything is freed and must come back to zero.
//
// How much: OOMLAB_FUZZ_OPS operations per run, one run per seed in OOMLAB_FUZZ_SEEDS
// (fuzz_settings.hpp, README.md). The default, 3 settings x 3 seeds x 120000 = 1.08M operations,
// takes about 3.5 s on the 2-core CI machine (~0.3M ops/s). Long mode, after touching the
// allocator or before a release (~5.5 min per 100M operations and setting; the preset's 600 s
// test timeout is lifted):
//   OOMLAB_FUZZ_OPS=100000000 OOMLAB_FUZZ_SEEDS=1-4 ctest --preset default -R AllocatorFuzz --timeout 86400 -j 3
// A failure names its seed and the variables that run it again.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "harness/memory/alloc_rounding.hpp"
#include "harness/memory/caching_allocator.hpp"
#include "harness/memory/size.hpp"
#include "fuzz_settings.hpp"
#include "test_sources.hpp"

namespace oomlab::memory {
namespace {
using namespace oomlab::literals;
using testing::FuzzSettings;
using testing::ManualEventSource;

// The structural walk is O(blocks); every 16th operation keeps it a small share of the run
// while no broken state survives more than 16 operations unseen.
constexpr std::uint64_t kFullCheckEvery = 16;

struct LiveBlock {
  std::size_t requested;
  std::size_t size;
  Tag tag;
};

class Fuzzer {
 public:
  Fuzzer(AllocatorConfig config, std::uint64_t seed)
      // Events complete on their 2nd query: frees really are deferred, and waits terminate.
      : source_(make_dry_source(), 2), allocator_(source_, config), rng_(seed) {}

  void run(std::uint64_t operations) {
    for (std::uint64_t op = 0; op < operations; ++op) {
      step();
      check_invariants(op);
      if (op % kFullCheckEvery == kFullCheckEvery - 1 || op + 1 == operations) check_structure(op);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

  void drain_and_check_zero() {
    std::vector<void*> pointers;
    for (auto& [address, block] : live_) pointers.push_back(reinterpret_cast<void*>(address));
    for (void* p : pointers) free_one(p);
    allocator_.empty_cache();
    MemoryStats s = allocator_.stats();
    EXPECT_EQ(s.allocated.current, 0);
    EXPECT_EQ(s.active.current, 0);
    EXPECT_EQ(s.requested.current, 0);
    EXPECT_EQ(s.reserved.current, 0);
    EXPECT_EQ(s.segments.current, 0);
    EXPECT_EQ(s.allocations.current, 0);
    for (Tag t : all_tags()) EXPECT_EQ(s.tag(t).current, 0);
    EXPECT_EQ(source_.live_events(), 0u);
    EXPECT_EQ(allocator_.check_consistency(), "");
  }

  const CachingAllocator& allocator() const { return allocator_; }

 private:
  std::size_t random_size() {
    // Mostly small and medium, sometimes large: exercises both pools and both segment rules.
    std::uint64_t r = rng_() % 100;
    if (r < 45) return 1 + rng_() % 1_MiB;
    if (r < 85) return 1_MiB + 1 + rng_() % (10_MiB);
    return 10_MiB + rng_() % 40_MiB;
  }

  void step() {
    std::uint64_t r = rng_() % 1000;
    if (r < 520 || live_.empty()) {
      std::size_t bytes = random_size();
      Tag tag = static_cast<Tag>(rng_() % kTagCount);
      StreamHandle stream = rng_() % 4 == 0 ? 1 : 0;
      try {
        void* p = allocator_.allocate(bytes, tag, stream);
        add_live(p, bytes, tag);
      } catch (const OomError& e) {
        ++ooms_;
        EXPECT_EQ(e.info().requested, round_request(bytes, allocator_.config().roundup_power2_divisions));
      }
    } else if (r < 960) {
      auto it = live_.begin();
      std::advance(it, static_cast<long>(rng_() % live_.size()));
      free_one(reinterpret_cast<void*>(it->first));
    } else if (r < 995) {
      auto it = live_.begin();
      std::advance(it, static_cast<long>(rng_() % live_.size()));
      allocator_.record_stream(reinterpret_cast<void*>(it->first), 2 + rng_() % 2);
    } else {
      allocator_.empty_cache();
    }
  }

  void add_live(void* p, std::size_t bytes, Tag tag) {
    auto address = reinterpret_cast<std::uintptr_t>(p);
    std::size_t size = allocator_.block_size(p);
    ASSERT_GE(size, bytes);
    ASSERT_EQ(size % 512, 0u);
    // No overlap with the live neighbours on either side.
    auto next = live_.lower_bound(address);
    if (next != live_.end()) {
      ASSERT_LE(address + size, next->first) << "overlaps the next live block";
    }
    if (next != live_.begin()) {
      auto prev = std::prev(next);
      ASSERT_LE(prev->first + prev->second.size, address) << "overlaps the previous live block";
    }
    live_[address] = LiveBlock{bytes, size, tag};
    allocated_ += size;
    requested_ += bytes;
    tag_bytes_[static_cast<int>(tag)] += size;
  }

  void free_one(void* p) {
    auto it = live_.find(reinterpret_cast<std::uintptr_t>(p));
    allocated_ -= it->second.size;
    requested_ -= it->second.requested;
    tag_bytes_[static_cast<int>(it->second.tag)] -= it->second.size;
    live_.erase(it);
    allocator_.deallocate(p);
  }

  // Segment bytes as the trace reports them (mapped minus unmapped), read incrementally.
  void follow_trace() {
    const auto& events = allocator_.trace().events();
    if (events.empty()) return;
    std::uint64_t fresh = seen_any_ ? events.back().sequence - last_sequence_ : events.size();
    ASSERT_LE(fresh, events.size()) << "the trace dropped events between two checks";
    for (std::size_t i = events.size() - fresh; i < events.size(); ++i) {
      const TraceEvent& e = events[i];
      if (e.kind == EventKind::segment_map) segment_bytes_ += static_cast<std::int64_t>(e.bytes);
      if (e.kind == EventKind::segment_unmap) segment_bytes_ -= static_cast<std::int64_t>(e.bytes);
    }
    last_sequence_ = events.back().sequence;
    seen_any_ = true;
  }

  void check_structure(std::uint64_t op) {
    ASSERT_EQ(allocator_.check_consistency(), "") << "op " << op;
  }

  void check_invariants(std::uint64_t op) {
    MemoryStats s = allocator_.stats();
    follow_trace();
    ASSERT_EQ(s.allocated.current, allocated_) << "op " << op;
    ASSERT_EQ(s.requested.current, requested_) << "op " << op;
    ASSERT_EQ(s.allocations.current, static_cast<std::int64_t>(live_.size())) << "op " << op;
    ASSERT_EQ(s.reserved.current, segment_bytes_) << "op " << op;
    ASSERT_GE(s.active.current, s.allocated.current) << "op " << op;
    ASSERT_LE(s.active.current, s.reserved.current) << "op " << op;
    ASSERT_LE(static_cast<std::int64_t>(s.largest_free_block), s.reserved.current - s.allocated.current);
    for (Tag t : all_tags()) ASSERT_EQ(s.tag(t).current, tag_bytes_[static_cast<int>(t)]) << "op " << op;
    if (budget_ != AllocatorConfig::kUnlimited) {
      // A fraction lets expandable segments map up to one granule past it, as PyTorch's does.
      const std::size_t overshoot = allocator_.config().budget_is_fraction ? kLargeBuffer : 0;
      ASSERT_LE(static_cast<std::size_t>(s.reserved.current), budget_ + overshoot) << "op " << op;
    }
    ASSERT_EQ(s.num_ooms, ooms_);
  }

 public:
  std::size_t budget_ = AllocatorConfig::kUnlimited;
  std::uint64_t ooms_ = 0;

 private:
  ManualEventSource source_;
  CachingAllocator allocator_;
  std::mt19937_64 rng_;
  std::map<std::uintptr_t, LiveBlock> live_;
  std::int64_t allocated_ = 0, requested_ = 0, segment_bytes_ = 0;
  std::array<std::int64_t, kTagCount> tag_bytes_{};
  std::uint64_t last_sequence_ = 0;
  bool seen_any_ = false;
};

void fuzz_one_seed(AllocatorConfig config, std::uint64_t seed, std::uint64_t operations) {
  // The trace must hold one op's events between checks; its default capacity does.
  Fuzzer fuzzer(config, seed);
  fuzzer.budget_ = config.budget;
  fuzzer.run(operations);
  if (::testing::Test::HasFatalFailure()) return;
  MemoryStats s = fuzzer.allocator().stats();
  if (operations >= 10000) {  // a short run may not reach the budget yet
    EXPECT_GT(s.num_ooms, 10u) << "the budget should be small enough for OOMs";
    if (config.caching) EXPECT_GT(s.num_alloc_retries, 0u);  // without a cache nothing is retried
  }
  fuzzer.drain_and_check_zero();
}

// One run per seed; a bad OOMLAB_FUZZ_* value fails the test instead of being ignored.
void fuzz(AllocatorConfig config, std::uint64_t setting) {
  FuzzSettings settings;
  try {
    settings = testing::fuzz_settings_from_env();
  } catch (const std::invalid_argument& e) {
    FAIL() << e.what();
  }
  for (std::uint64_t seed : settings.seeds) {
    // The setting joins the seed so that the three settings do not replay one sequence.
    SCOPED_TRACE("seed " + std::to_string(seed) + "; run it again with " + settings.rerun_command(seed));
    fuzz_one_seed(config, seed * 3 + setting, settings.operations);
    if (::testing::Test::HasFailure()) return;
  }
}

AllocatorConfig small_budget() {
  AllocatorConfig config;
  config.budget = 400_MiB;
  return config;
}

TEST(AllocatorFuzz, DefaultSettings) { fuzz(small_budget(), 0); }

TEST(AllocatorFuzz, MaxSplitSize) {
  AllocatorConfig config = small_budget();
  config.max_split_size = 24_MiB;
  fuzz(config, 1);
}

TEST(AllocatorFuzz, ExpandableSegments) {
  AllocatorConfig config = small_budget();
  config.expandable_segments = true;
  fuzz(config, 2);
}

// The settings a replay of a PyTorch snapshot adds: garbage collection and power-of-two
// rounding, expandable segments under a memory fraction, no caching at all.
TEST(AllocatorFuzz, GarbageCollectionAndRoundupDivisions) {
  AllocatorConfig config = small_budget();
  config.garbage_collection_threshold = 0.5;
  config.roundup_power2_divisions.fill(4);
  config.max_split_size = 24_MiB;
  fuzz(config, 3);
}

TEST(AllocatorFuzz, ExpandableSegmentsUnderAFraction) {
  AllocatorConfig config = small_budget();
  config.expandable_segments = true;
  config.budget_is_fraction = true;
  fuzz(config, 4);
}

TEST(AllocatorFuzz, NoCaching) {
  AllocatorConfig config = small_budget();
  config.caching = false;
  fuzz(config, 5);
}

}  // namespace
}  // namespace oomlab::memory
