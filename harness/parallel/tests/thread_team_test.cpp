// The thread team: every index runs once per job (and once per for_each), and copies of any size (page-aligned
// blocks taken in turn, a ragged tail, small copies on the caller) equal memcpy.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/parallel/thread_team.hpp"

namespace oomlab {
namespace {

TEST(ThreadTeam, RunsEveryIndexOncePerJob) {
  ThreadTeam team(5);
  ASSERT_EQ(team.size(), 5u);
  for (int job = 0; job < 50; ++job) {
    std::vector<std::atomic<int>> seen(team.size());
    team.run([&](std::size_t t) { seen[t].fetch_add(1); });
    for (const std::atomic<int>& count : seen) ASSERT_EQ(count.load(), 1);
  }
  EXPECT_GE(ThreadTeam().size(), 1u);  // 0: one per hardware thread
}

TEST(ThreadTeam, ForEachRunsEveryIndexOnce) {
  ThreadTeam team(4);
  for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{1000}}) {
    std::vector<std::atomic<int>> seen(count);
    team.for_each(count, [&](std::size_t i) { seen[i].fetch_add(1); });
    for (const std::atomic<int>& times : seen) ASSERT_EQ(times.load(), 1) << count;
  }
}

TEST(ThreadTeam, CopyEqualsMemcpyForEverySize) {
  ThreadTeam team(4);
  for (std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, std::size_t{4097}, 600 * KiB + 5, 8 * MiB - 3, 37 * MiB + 123}) {
    std::vector<std::uint8_t> src(bytes), dst(bytes, 0xAB);
    for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<std::uint8_t>(i * 2654435761u >> 13);
    team.copy(dst.data(), src.data(), bytes);
    EXPECT_EQ(dst, src) << bytes << " bytes";
  }
}

}  // namespace
}  // namespace oomlab
