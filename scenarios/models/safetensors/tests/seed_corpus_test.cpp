// The fuzzer's committed seeds (fuzz/corpus) must stay valid inputs as the format code changes:
// a seed the parser now rejects on its first byte would steer the fuzzer nowhere.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "scenarios/models/safetensors/safetensors_format.hpp"

namespace oomlab::safetensors {
namespace {

TEST(SeedCorpus, EverySeedParsesAsTheImageItsNameSays) {
  std::size_t seeds = 0;
  for (const auto& item : std::filesystem::directory_iterator(OOMLAB_SEED_CORPUS)) {
    const std::string name = item.path().filename().string();
    std::ifstream in(item.path(), std::ios::binary);
    const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
    ++seeds;
    if (name.rfind("sparse-", 0) == 0) {  // [length][JSON][data size] (fuzz/header_fuzz.cpp)
      ASSERT_GE(bytes.size(), 16u) << name;
      const std::uint64_t length = read_u64_le(bytes.data());
      ASSERT_EQ(length, bytes.size() - 16) << name;
      const std::string json(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(length));
      EXPECT_NO_THROW(parse_header(json, read_u64_le(bytes.data() + 8 + length), name)) << name;
    } else {
      EXPECT_NO_THROW(parse_file_image(bytes.data(), bytes.size(), name)) << name;
    }
  }
  EXPECT_GE(seeds, 10u);
}

}  // namespace
}  // namespace oomlab::safetensors
