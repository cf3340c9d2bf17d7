// Option values shared by run and suite.
#include "harness/cli/commands.hpp"

#include <cmath>

#include "harness/runner/atomic_file.hpp"

namespace oomlab::cli {

DeviceKind device_option(const std::string& text) {
  auto kind = parse_device_kind(text);
  if (!kind) throw UsageError("--device '" + text + "' is not one of: cuda, host, dry");
  if (*kind == DeviceKind::cuda && !cuda_available()) {
    throw UsageError("--device cuda: no usable CUDA device (" + cuda_unavailable_reason() + ")");
  }
  return *kind;
}

Scale scale_option(const std::string& text) {
  auto scale = parse_scale(text);
  if (!scale) throw UsageError("--scale '" + text + "' is not one of: tiny, small, full");
  return *scale;
}

double timeout_option(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) {
    throw UsageError("--timeout must be 0 (no limit) or a positive number of seconds, got " +
                     std::to_string(seconds));
  }
  return seconds;
}

void require_writable(const char* option, const std::string& path) {
  std::string why = why_not_writable(path);
  if (!why.empty()) throw UsageError(std::string(option) + " " + path + ": cannot write (" + why + ")");
}

}  // namespace oomlab::cli
