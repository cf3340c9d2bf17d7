// Quoting what a user typed inside an error message: every bad input gets one readable line,
// so the quote is capped and control characters (a pasted newline) are escaped.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace oomlab {

// 'text' in single quotes, control bytes as \xNN. When that is longer than max_chars, the
// first max_chars, "..." and the input's length: "'aaaa...' (5000 chars)".
std::string quote_user_text(std::string_view text, std::size_t max_chars = 60);

// `text` without leading and trailing spaces and tabs.
std::string_view trim_blanks(std::string_view text);

}  // namespace oomlab
