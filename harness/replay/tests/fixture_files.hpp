// The committed fixtures (fixtures/make_fixtures.py writes them) and the checks every error
// message must pass.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "harness/replay/pickle_decoder.hpp"
#include "harness/replay/snapshot.hpp"
#include "harness/replay/snapshot_file.hpp"

namespace oomlab::replay::testing {

inline std::string fixture_path(const std::string& name) {
  return std::string(OOMLAB_REPLAY_FIXTURES) + "/" + name;
}

inline std::vector<std::uint8_t> read_fixture(const std::string& name) {
  std::ifstream file(fixture_path(name), std::ios::binary);
  EXPECT_TRUE(file.good()) << "missing fixture " << name << " (run fixtures/make_fixtures.py)";
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

inline std::vector<std::uint8_t> bytes_of(const std::string& text) {
  return {text.begin(), text.end()};
}

inline PickleDocument decode(const std::vector<std::uint8_t>& bytes,
                             const PickleLimits& limits = {}) {
  return decode_pickle(bytes.data(), bytes.size(), limits);
}

// The PickleError's message, or "(no error)".
inline std::string decode_error(const std::vector<std::uint8_t>& bytes,
                                const PickleLimits& limits = {}) {
  try {
    decode(bytes, limits);
  } catch (const PickleError& error) {
    return error.what();
  }
  return "(no error)";
}

// load_snapshot's SnapshotError message, or "(no error)".
inline std::string load_error(const std::string& path, const SnapshotReadLimits& limits = {}) {
  try {
    load_snapshot(path, limits);
  } catch (const SnapshotError& error) {
    return error.what();
  }
  return "(no error)";
}

// What every message must be: one short line that contains `part`.
inline void expect_one_line(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos)
      << "'" << part << "' not in: " << message.substr(0, 400);
  EXPECT_EQ(message.find('\n'), std::string::npos) << message.substr(0, 400);
  EXPECT_LT(message.size(), 400u) << message.substr(0, 400);
}

}  // namespace oomlab::replay::testing
