// OOM diagnosis (capacity, fragmentation, external), the message, and life after an OOM.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allocator_fixture.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory {
namespace {
using namespace oomlab::literals;
using testing::DryAllocator;
using testing::with_budget;

OomError catch_oom(CachingAllocator& allocator, std::size_t bytes, Tag tag = Tag::activations) {
  try {
    allocator.allocate(bytes, tag, 0);
  } catch (const OomError& e) {
    return e;
  }
  ADD_FAILURE() << "no OOM for " << format_size(bytes);
  return OomError(OomInfo{});
}

// Three 20 MiB segments, each holding an 8 MiB hole, an 8 MiB live block and a 4 MiB tail:
// 36 MiB reserved-but-unallocated, but no free block above 8 MiB.
std::vector<void*> fragment(CachingAllocator& allocator) {
  std::vector<void*> holes, kept;
  for (int i = 0; i < 3; ++i) {
    holes.push_back(allocator.allocate(8_MiB, Tag::activations, 0));
    kept.push_back(allocator.allocate(8_MiB, Tag::weights, 0));
  }
  for (void* p : holes) allocator.deallocate(p);
  return kept;
}

// What the allocator reports when `requested` more does not fit `budget` with `allocated` bytes
// live, all of them reserved (no cached blocks).
OomInfo oom_with(std::size_t requested, std::size_t budget, std::size_t allocated) {
  OomInfo info;
  info.requested = requested;
  info.budget = budget;
  info.allocated = info.reserved = allocated;
  return info;
}

TEST(Diagnose, CapacityWhenAllocatedPlusRequestExceedsTheBudget) {
  OomInfo info = oom_with(60_MiB, 100_MiB, 60_MiB);
  diagnose(info);
  EXPECT_EQ(info.diagnosis, Diagnosis::capacity);
  EXPECT_NE(info.remedy.find("batch"), std::string::npos);
}

// The capacity remedy names what to shrink: whatever fills the card.
TEST(Diagnose, CapacityRemedyFollowsTheDominantTag) {
  OomInfo weights;  // a whole checkpoint asked for at once, nothing live yet
  weights.requested = 25_MiB;
  weights.budget = 24_MiB;
  weights.tag = Tag::weights;
  diagnose(weights);
  EXPECT_EQ(weights.diagnosis, Diagnosis::capacity);
  EXPECT_NE(weights.remedy.find("int8"), std::string::npos) << weights.remedy;
  EXPECT_NE(weights.remedy.find("tensor by tensor"), std::string::npos) << weights.remedy;

  OomInfo activations = oom_with(2_MiB, 100_MiB, 99_MiB);  // a small request on a card full of activations
  activations.tag = Tag::workspace;
  activations.largest_tag = Tag::activations;
  activations.tag_allocated[static_cast<int>(Tag::activations)] = 90_MiB;
  diagnose(activations);
  EXPECT_NE(activations.remedy.find("checkpointing"), std::string::npos) << activations.remedy;
  EXPECT_EQ(activations.remedy.find("int8"), std::string::npos) << activations.remedy;

  OomInfo optimizer = activations;
  optimizer.largest_tag = Tag::optimizer;
  optimizer.tag_allocated[static_cast<int>(Tag::optimizer)] = 95_MiB;
  diagnose(optimizer);
  EXPECT_NE(optimizer.remedy.find("offload"), std::string::npos) << optimizer.remedy;
}

// A training run's OOM: the failing request and its tag, the weights the largest tag.
struct TrainingState {
  std::size_t weights, grads, optimizer;
};
OomInfo training_oom(std::size_t requested, Tag tag, std::size_t budget, TrainingState live) {
  OomInfo info = oom_with(requested, budget, live.weights + live.grads + live.optimizer);
  info.tag = tag;
  info.largest_tag = Tag::weights;
  info.tag_allocated[static_cast<int>(Tag::weights)] = live.weights;
  info.tag_allocated[static_cast<int>(Tag::grads)] = live.grads;
  info.tag_allocated[static_cast<int>(Tag::optimizer)] = live.optimizer;
  return info;
}

// train7b bf16-mixed fails on an optimizer allocation while the weights are the largest tag: it
// was told to load the weights in a smaller dtype. Training the whole model, what fills the card
// is weights + gradients + moments, and the remedies are LoRA, 8-bit moments, offload, sharding.
TEST(Diagnose, ATrainingRunOutOfRoomForItsStateIsToldTheTrainingRemedies) {
  OomInfo info = training_oom(30_GiB, Tag::optimizer, 100_GiB, {38_GiB, 12_GiB, 25_GiB});
  diagnose(info);
  EXPECT_EQ(info.diagnosis, Diagnosis::capacity);
  for (const char* remedy : {"LoRA", "8 bits", "offload", "shard"}) {
    EXPECT_NE(info.remedy.find(remedy), std::string::npos) << remedy << " in: " << info.remedy;
  }
  EXPECT_EQ(info.remedy.find("the weights do not fit"), std::string::npos) << info.remedy;
  EXPECT_NE(info.remedy.find("optimizer 25.00GiB"), std::string::npos) << info.remedy;
}

// A LoRA run on a 16 GB card: the frozen bf16 base fills it, the adapters' gradients are a few
// MiB. Telling it to "train LoRA adapters" would be advice it already follows: the base is what
// to shrink (QLoRA's 4-bit base).
TEST(Diagnose, AnAdapterRunIsToldToShrinkItsFrozenBaseNotToTrainLoRA) {
  OomInfo info = training_oom(1_GiB, Tag::workspace, 15_GiB, {14_GiB + 512_MiB, 72_MiB, 0});
  diagnose(info);
  EXPECT_EQ(info.diagnosis, Diagnosis::capacity);
  EXPECT_NE(info.remedy.find("4-bit NF4"), std::string::npos) << info.remedy;
  EXPECT_NE(info.remedy.find("gradients 72.00MiB"), std::string::npos) << info.remedy;
  EXPECT_EQ(info.remedy.find("training state does not fit"), std::string::npos) << info.remedy;

  OomInfo whole = info;  // the same weights with a whole model's moments beside them
  whole.tag_allocated[static_cast<int>(Tag::optimizer)] = 4_GiB;
  whole.allocated = whole.reserved = whole.allocated + 4_GiB;
  diagnose(whole);
  EXPECT_NE(whole.remedy.find("training state does not fit"), std::string::npos) << whole.remedy;
}

TEST(Diagnose, FragmentationWhenTheLargestFreeBlockIsTooSmall) {
  OomInfo info = oom_with(20_MiB, 12_GiB, 11_GiB + 512_MiB);
  info.reserved += 300_MiB;
  info.largest_free_block = 10_MiB;
  diagnose(info);
  EXPECT_EQ(info.diagnosis, Diagnosis::fragmentation);
  EXPECT_NE(info.remedy.find("max_split_size_mb"), std::string::npos);
  EXPECT_NE(info.remedy.find("expandable_segments"), std::string::npos);
}

TEST(Diagnose, ExternalWhenOnlyOutsideMemoryMakesTheDifference) {
  OomInfo info = oom_with(20_MiB, 100_MiB, 40_MiB);
  info.external = 50_MiB;
  diagnose(info);
  EXPECT_EQ(info.diagnosis, Diagnosis::external);
  EXPECT_NE(info.remedy.find("other processes"), std::string::npos);
}

TEST(Diagnose, LeakIsKeptWhenSetByTheDetector) {
  OomInfo info;
  info.diagnosis = Diagnosis::leak;
  diagnose(info);
  EXPECT_EQ(info.diagnosis, Diagnosis::leak);
  EXPECT_FALSE(info.remedy.empty());
  EXPECT_STREQ(diagnosis_name(Diagnosis::leak), "leak");
}

TEST(OomError, IsABadAlloc) {
  DryAllocator dry(with_budget(10_MiB));
  EXPECT_THROW(dry.allocator.allocate(11_MiB), std::bad_alloc);
}

TEST(OomError, CapacityFromTheAllocator) {
  DryAllocator dry(with_budget(100_MiB));
  void* a = dry.allocator.allocate(60_MiB, Tag::weights, 0);
  OomError e = catch_oom(dry.allocator, 60_MiB);
  EXPECT_EQ(e.info().diagnosis, Diagnosis::capacity);
  EXPECT_EQ(e.info().requested, 60_MiB);
  EXPECT_EQ(e.info().allocated, 60_MiB);
  EXPECT_EQ(e.info().tag, Tag::activations);
  EXPECT_EQ(e.info().largest_tag, Tag::weights);
  std::string message = e.what();
  for (const char* part : {"oomlab: out of memory: tried to allocate 60.00MiB", "budget 100.00MiB",
                           "60.00MiB allocated", "0B reserved but unallocated", "largest free block 0B",
                           "largest tag weights (60.00MiB)", "diagnosis: capacity"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
  }
  dry.allocator.deallocate(a);
}

TEST(OomError, FragmentationFromTheAllocator) {
  DryAllocator dry(with_budget(60_MiB));
  std::vector<void*> kept = fragment(dry.allocator);
  OomError e = catch_oom(dry.allocator, 9_MiB);
  EXPECT_EQ(e.info().diagnosis, Diagnosis::fragmentation);
  EXPECT_EQ(e.info().reserved - e.info().allocated, 36_MiB);
  EXPECT_EQ(e.info().largest_free_block, 8_MiB);
  std::string message = e.what();
  EXPECT_NE(message.find("36.00MiB reserved but unallocated"), std::string::npos) << message;
  EXPECT_NE(message.find("OOMLAB_ALLOC_CONF=max_split_size_mb"), std::string::npos) << message;
  for (void* p : kept) dry.allocator.deallocate(p);
}

TEST(OomError, ExpandableSegmentsFitWhereSegmentsFragment) {
  DryAllocator dry(testing::with_setting(&AllocatorConfig::expandable_segments, true, 60_MiB));
  std::vector<void*> kept = fragment(dry.allocator);
  EXPECT_NE(dry.allocator.allocate(9_MiB), nullptr);
}

TEST(OomError, ExternalFromSimulatedExternal) {
  AllocatorConfig config = with_budget(100_MiB);
  config.simulated_external = 50_MiB;
  DryAllocator dry(config);
  void* a = dry.allocator.allocate(40_MiB);
  OomError e = catch_oom(dry.allocator, 20_MiB);
  EXPECT_EQ(e.info().diagnosis, Diagnosis::external);
  EXPECT_EQ(e.info().external, 50_MiB);
  EXPECT_NE(std::string(e.what()).find("50.00MiB used outside the allocator"), std::string::npos) << e.what();
  dry.allocator.deallocate(a);
}

TEST(OomError, HugeRequestIsACapacityOomNotACrash) {
  DryAllocator dry;
  OomError e = catch_oom(dry.allocator, SIZE_MAX);
  EXPECT_EQ(e.info().diagnosis, Diagnosis::capacity);
}

// `--budget unlimited` and caps near it: budget + external must not wrap around to "full".
TEST(OomError, BudgetsAtTheTopOfTheRangeDoNotOverflow) {
  for (std::size_t budget : {AllocatorConfig::kUnlimited, AllocatorConfig::kUnlimited - 1}) {
    for (bool expandable : {false, true}) {
      AllocatorConfig config = with_budget(budget);
      config.simulated_external = 1_GiB;
      config.expandable_segments = expandable;
      DryAllocator dry(config);
      void* a = dry.allocator.allocate(100_MiB);
      EXPECT_EQ(dry.allocator.block_size(a), 100_MiB);
      OomError e = catch_oom(dry.allocator, SIZE_MAX / 2);
      EXPECT_EQ(e.info().diagnosis, Diagnosis::capacity) << e.what();
      EXPECT_NE(std::string(e.what()).find("no device holds 8.00EiB"), std::string::npos) << e.what();
      dry.allocator.deallocate(a);
    }
  }
}

TEST(OomError, UnlimitedBudgetReadsUnlimited) {
  DryAllocator dry;
  OomError e = catch_oom(dry.allocator, SIZE_MAX);
  EXPECT_NE(std::string(e.what()).find("budget unlimited;"), std::string::npos) << e.what();
  EXPECT_NE(dry.allocator.memory_summary().find("| Budget                    | unlimited "), std::string::npos)
      << dry.allocator.memory_summary();
}

TEST(AfterOom, AllocatorIsConsistentAndKeepsWorking) {
  DryAllocator dry(with_budget(64_MiB));
  void* a = dry.allocator.allocate(30_MiB);
  EXPECT_THROW(dry.allocator.allocate(40_MiB), OomError);
  MemoryStats stats = dry.stats();
  EXPECT_EQ(stats.num_ooms, 1u);
  EXPECT_EQ(stats.allocated.current, static_cast<std::int64_t>(30_MiB));
  EXPECT_EQ(stats.reserved.current, static_cast<std::int64_t>(30_MiB));
  EXPECT_EQ(stats.allocations.current, 1);
  EXPECT_EQ(dry.count(EventKind::oom), 1u);

  dry.allocator.deallocate(a);
  void* b = dry.allocator.allocate(40_MiB);  // the remedy: free first, then it fits
  EXPECT_EQ(dry.allocator.block_size(b), 40_MiB);
  dry.allocator.deallocate(b);
  dry.allocator.empty_cache();
  EXPECT_EQ(dry.stats().reserved.current, 0);
}

}  // namespace
}  // namespace oomlab::memory
