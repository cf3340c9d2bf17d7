// /proc/meminfo parsing and the offload's host-memory refusal line.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "harness/device/host_memory.hpp"
#include <unistd.h>

namespace oomlab {
namespace {

// A file name of this test in gtest's temporary folder.
std::string temp_file(const char* name) {
  return ::testing::TempDir() + "oomlab_host_memory_" + std::to_string(::getpid()) + "_" + name;
}

TEST(HostMemory, ReadsTotalAndAvailable) {
  const std::string path = temp_file("full");
  std::ofstream(path) << "MemTotal:       131072000 kB\nMemFree:         1000 kB\n"
                         "MemAvailable:   65536000 kB\nHugePages_Total:       0\n";
  const auto memory = read_host_memory(path);
  ASSERT_TRUE(memory.has_value());
  EXPECT_EQ(memory->total, std::size_t{131072000} << 10);
  EXPECT_EQ(memory->available, std::size_t{65536000} << 10);
  std::remove(path.c_str());
}

TEST(HostMemory, MissingOrIncompleteIsNothing) {
  EXPECT_FALSE(read_host_memory(temp_file("absent")).has_value());
  const std::string path = temp_file("partial");
  std::ofstream(path) << "MemTotal: 100 kB\n";  // an old kernel without MemAvailable
  EXPECT_FALSE(read_host_memory(path).has_value());
  std::remove(path.c_str());
}

TEST(HostMemory, TheRealHostHasSome) {
  const auto memory = read_host_memory();
  if (!memory) GTEST_SKIP() << "no /proc/meminfo here";
  EXPECT_GT(memory->total, 0u);
  EXPECT_LE(memory->available, memory->total);
}

TEST(HostMemory, ShortfallIsOneLineWithBothSizes) {
  const HostMemory memory{std::size_t{128} << 30, std::size_t{60} << 30};
  EXPECT_EQ(host_memory_shortfall(std::size_t{50} << 30, memory, "offload"), "");
  const std::string line = host_memory_shortfall(std::size_t{75} << 30, memory, "offload");
  EXPECT_NE(line.find("offload needs 75.00GiB of host memory"), std::string::npos) << line;
  EXPECT_NE(line.find("60.00GiB available (of 128.00GiB)"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace oomlab
