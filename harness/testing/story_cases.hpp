// The (device, scale) cases every scenario's story test runs in CI: host at tiny scale (real
// math) and dry at every scale (the full-scale allocation sequence), named "host_tiny", ...
#pragma once
#include <string>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab::testing {

struct StoryCase {
  DeviceKind device;
  Scale scale;
};

inline std::vector<StoryCase> host_tiny_and_dry_cases() {
  return {{DeviceKind::host, Scale::tiny}, {DeviceKind::dry, Scale::tiny},
          {DeviceKind::dry, Scale::small}, {DeviceKind::dry, Scale::full}};
}

// gtest's name generator for parameters with .device and .scale.
struct StoryCaseName {
  template <class Info>
  std::string operator()(const Info& info) const {
    return std::string(device_kind_name(info.param.device)) + "_" + scale_name(info.param.scale);
  }
};

}  // namespace oomlab::testing
