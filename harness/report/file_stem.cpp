#include "harness/report/file_stem.hpp"

namespace oomlab::report {

std::string safe_file_stem(const std::string& text) {
  constexpr std::size_t kMaxBytes = 80;
  std::string stem;
  for (const char c : text.substr(0, kMaxBytes)) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '_' || c == '.' || c == '+';
    stem += safe ? c : '_';
  }
  if (stem.empty() || stem.front() == '.') stem.insert(stem.begin(), '_');
  return stem;
}

}  // namespace oomlab::report
