// How much memory a call costs at its peak: Linux's high-water mark of resident memory (VmHWM),
// reset just before the call (/proc/self/clear_refs "5"). Tests of hostile inputs use it to
// show a refusal cost kilobytes, not the gigabytes the input announced.
#pragma once
#include <cstddef>
#include <fstream>
#include <optional>
#include <string>

namespace oomlab::replay::testing {

inline std::optional<std::size_t> resident_peak_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return std::nullopt;
}

inline bool reset_resident_peak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return clear.good();
}

// The growth of the resident peak over `call` (nullopt where Linux does not say).
template <typename Call>
std::optional<std::size_t> peak_growth_of(Call call) {
  const std::optional<std::size_t> before = resident_peak_bytes();
  if (!before || !reset_resident_peak()) return std::nullopt;
  call();
  const std::optional<std::size_t> after = resident_peak_bytes();
  if (!after) return std::nullopt;
  return *after > *before ? *after - *before : 0;
}

}  // namespace oomlab::replay::testing
