#include "scenarios/spawn/shm_ring.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>
#include <vector>

#include "harness/process/process.hpp"

namespace oomlab::scenarios {
namespace {

bool shm_exists(const std::string& name) { return std::filesystem::exists("/dev/shm" + name); }

TEST(ShmRing, CreatorUnlinksTheNameOnDestruction) {
  std::string name;
  {
    ShmRing ring = ShmRing::create(ShmRing::unique_name("test"), 4, 128, 64);
    name = ring.name();
    EXPECT_TRUE(shm_exists(name));
    EXPECT_EQ(ring.slot_count(), 4u);
    EXPECT_EQ(ring.slot_bytes(), 128u);
  }
  EXPECT_FALSE(shm_exists(name));
}

TEST(ShmRing, EarlyUnlinkKeepsTheMappingUsable) {
  ShmRing ring = ShmRing::create(ShmRing::unique_name("test"), 2, 64, 0);
  ring.unlink();
  EXPECT_FALSE(shm_exists(ring.name()));
  void* slot = ring.begin_write(0, nullptr);
  std::memset(slot, 7, 64);
  ring.end_write(0);
  const void* read = ring.begin_read(0, nullptr);
  EXPECT_EQ(static_cast<const unsigned char*>(read)[63], 7);
  ring.end_read(0);
}

TEST(ShmRing, BadArgumentsAndNamesThrow) {
  EXPECT_THROW(ShmRing::create(ShmRing::unique_name("test"), 0, 64, 0), std::invalid_argument);
  EXPECT_THROW(ShmRing::attach("/oomlab-test-no-such-ring"), std::system_error);
  ShmRing ring = ShmRing::create(ShmRing::unique_name("test"), 2, 64, 0);
  EXPECT_THROW(ShmRing::create(ring.name(), 2, 64, 0), std::system_error);  // name taken
  EXPECT_THROW(ring.begin_write(-1, nullptr), std::invalid_argument);
}

TEST(ShmRing, AttachSeesTheSameMemoryAndUserArea) {
  ShmRing ring = ShmRing::create(ShmRing::unique_name("test"), 3, 256, 32);
  std::memcpy(ring.user_area(), "control", 8);
  ShmRing other = ShmRing::attach(ring.name());
  EXPECT_EQ(other.slot_count(), 3u);
  EXPECT_EQ(other.slot_bytes(), 256u);
  EXPECT_STREQ(static_cast<const char*>(other.user_area()), "control");
}

TEST(ShmRing, KeepWaitingFalseEndsTheWait) {
  ShmRing ring = ShmRing::create(ShmRing::unique_name("test"), 2, 64, 0);
  int checks = 0;
  EXPECT_EQ(ring.begin_read(0, [&] { return ++checks < 3; }), nullptr);
  EXPECT_EQ(checks, 3);
}

// Producers in separate processes (forked, each writing batches w, w+N, ...) and one consumer:
// every batch arrives once, in order, with the payload its producer wrote.
TEST(ShmRing, ForkedProducersDeliverEveryBatchOnceInOrder) {
  constexpr int kProducers = 3, kBatches = 200, kSlots = 4;
  ShmRing ring = ShmRing::create(ShmRing::unique_name("test"), kSlots, 2 * sizeof(std::int64_t), 0);
  std::vector<process::Child> producers;
  for (int w = 0; w < kProducers; ++w) {
    producers.push_back(process::fork_call([&ring, w](int) {
      for (std::int64_t b = w; b < kBatches; b += kProducers) {
        auto* slot = static_cast<std::int64_t*>(ring.begin_write(b, nullptr));
        slot[0] = b;
        slot[1] = w;
        ring.end_write(b);
      }
      return 0;
    }));
  }
  for (std::int64_t b = 0; b < kBatches; ++b) {
    const auto* slot = static_cast<const std::int64_t*>(ring.begin_read(b, nullptr));
    ASSERT_EQ(slot[0], b);
    ASSERT_EQ(slot[1], b % kProducers);
    ring.end_read(b);
  }
  for (process::Child& p : producers) EXPECT_TRUE(p.wait().success());
}

}  // namespace
}  // namespace oomlab::scenarios
