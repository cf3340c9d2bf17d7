// Checks shared by the transformer scenario tests: an OOM that names activations, and the
// (device, scale) parameter of their story suites.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "harness/memory/oom_error.hpp"
#include "harness/memory/tags.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab::testing {

// At tiny scale cuBLASLt's fixed 32 MiB matmul workspace outweighs the whole model, so there
// the check is that activations lead every other tag; at small and full they lead outright.
inline void expect_activations_named(const memory::OomInfo& oom, Scale scale) {
  memory::Tag largest = memory::Tag::other;
  for (memory::Tag tag : memory::all_tags()) {
    if (tag == memory::Tag::workspace && scale == Scale::tiny) continue;
    if (oom.tag_allocated[static_cast<int>(tag)] > oom.tag_allocated[static_cast<int>(largest)]) largest = tag;
  }
  EXPECT_EQ(largest, memory::Tag::activations);
  if (scale != Scale::tiny) {
    EXPECT_EQ(oom.largest_tag, memory::Tag::activations);
  }
}

struct StoryCase {
  DeviceKind device;
  Scale scale;
};

inline std::string story_case_name(const ::testing::TestParamInfo<StoryCase>& info) {
  return std::string(device_kind_name(info.param.device)) + "_" + scale_name(info.param.scale);
}

}  // namespace oomlab::testing
