// The speed gate's test switch (ci/speed_gate.sh): OOMLAB_SLOW_KERNEL=FAMILY[:N] makes one kernel
// family launch N times (default 2) where it would launch once, so a slowed kernel can be shown
// to fail the gate without a commit. The result is unchanged (each launch writes the same output
// from the same inputs); only the time grows.
//   families: attention (the fused attention forward, kernels/attention/fused_attention.cu)
// Read here and nowhere else, once per process. Unset (always, outside that check) a launch pays
// one test of a cached pointer. Never set it for a measurement that is kept.
#pragma once
#include <cstdlib>
#include <string_view>

namespace oomlab::ops {

// How many times `family` launches under `setting` ("attention", "attention:3"): N for a setting
// that names the family (2 without ":N"; N is clamped to 1..16), 1 for anything else.
inline int slow_kernel_launches(std::string_view setting, std::string_view family) {
  const std::size_t colon = setting.find(':');
  if (setting.substr(0, colon) != family || family.empty()) return 1;
  if (colon == std::string_view::npos) return 2;
  int n = 0;
  for (char c : setting.substr(colon + 1)) {
    if (c < '0' || c > '9') return 2;
    n = n * 10 + (c - '0');
    if (n > 16) return 16;
  }
  return n < 1 ? 1 : n;
}

// The same for this process's OOMLAB_SLOW_KERNEL.
inline int slow_kernel_launches(std::string_view family) {
  static const char* const setting = std::getenv("OOMLAB_SLOW_KERNEL");
  return setting == nullptr ? 1 : slow_kernel_launches(setting, family);
}

}  // namespace oomlab::ops
