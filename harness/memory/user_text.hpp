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

// `text` with every control byte (C0, DEL; so ESC, CR, LF, NUL) written as \xNN, uncapped: for
// user data (a snapshot's file names, a record's scenario) printed to a terminal or a report,
// where a raw ESC would drive the terminal and a CR/LF would forge a line.
std::string printable_text(std::string_view text);

// `text` without leading and trailing spaces and tabs.
std::string_view trim_blanks(std::string_view text);

}  // namespace oomlab
