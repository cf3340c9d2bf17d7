#include "scenarios/spawn/device_budget.hpp"

#include <gtest/gtest.h>

#include "harness/memory/size.hpp"
#include "harness/memory/source.hpp"

namespace oomlab::scenarios {
namespace {

struct DryAllocator {
  std::unique_ptr<memory::MemorySource> source = memory::make_dry_source();
  memory::CachingAllocator allocator;
  explicit DryAllocator(std::size_t budget) : allocator(*source, [&] {
    memory::AllocatorConfig c;
    c.budget = budget;
    return c;
  }()) {}
};

TEST(DeviceBudget, WorkerContextsMakeAnExternalOomNamingThePids) {
  DryAllocator dry(1 * GiB);
  void* model = dry.allocator.allocate(256 * MiB);
  ExternalHolders holders{{101, 102}, {529 * MiB, 529 * MiB}};
  try {
    require_device_room(dry.allocator, 4 * MiB, memory::Tag::data, holders);
    FAIL() << "256 MiB + 4 MiB + 2 x 529 MiB does not fit 1 GiB";
  } catch (const memory::OomError& error) {
    EXPECT_EQ(error.info().diagnosis, memory::Diagnosis::external);
    EXPECT_EQ(error.info().external, 2 * 529 * MiB);
    EXPECT_EQ(error.info().requested, 4 * MiB);
    const std::string message = error.what();
    EXPECT_NE(message.find("pid 101"), std::string::npos) << message;
    EXPECT_NE(message.find("pid 102"), std::string::npos) << message;
    EXPECT_NE(message.find("worker check"), std::string::npos) << message;
  }
  dry.allocator.deallocate(model);
}

TEST(DeviceBudget, FitsWithoutHoldersOrUnderTheBudget) {
  DryAllocator dry(1 * GiB);
  EXPECT_NO_THROW(require_device_room(dry.allocator, 512 * MiB, memory::Tag::data, {}));
  EXPECT_NO_THROW(require_device_room(dry.allocator, 256 * MiB, memory::Tag::data, {{7}, {529 * MiB}}));
  DryAllocator unlimited(memory::AllocatorConfig::kUnlimited);
  EXPECT_NO_THROW(require_device_room(unlimited.allocator, 64 * GiB, memory::Tag::data, {{7}, {529 * MiB}}));
}

TEST(DeviceBudget, TooBigAloneIsCapacityNotExternal) {
  DryAllocator dry(1 * GiB);
  try {
    require_device_room(dry.allocator, 2 * GiB, memory::Tag::data, {{7}, {529 * MiB}});
    FAIL();
  } catch (const memory::OomError& error) {
    EXPECT_EQ(error.info().diagnosis, memory::Diagnosis::capacity);
  }
}

}  // namespace
}  // namespace oomlab::scenarios
