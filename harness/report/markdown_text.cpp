#include "harness/report/markdown_text.hpp"

#include <algorithm>
#include <cstring>

#include "harness/memory/user_text.hpp"

namespace oomlab::report {

std::string markdown_text(const std::string& text) {
  // What could end a code span, make a link or image, split a table cell or mark emphasis; "_"
  // stays (intraword, as in srgan_leak, it marks nothing), so names read as they are.
  static const char* const kEscaped = "\\`[]|*";
  std::string out;
  for (const char c : printable_text(text)) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      default:
        if (std::strchr(kEscaped, c) != nullptr) out += '\\';
        out += c;
    }
  }
  return out;
}

std::string markdown_code(const std::string& text) {
  const std::string shown = printable_text(text);
  // The fence is one backtick longer than the longest run inside; a space keeps it off the text.
  std::size_t longest = 0, run = 0;
  for (const char c : shown) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !shown.empty() && (shown.front() == '`' || shown.back() == '`');
  return fence + (pad ? " " : "") + shown + (pad ? " " : "") + fence;
}

}  // namespace oomlab::report
