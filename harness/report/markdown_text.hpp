// Text from records (scenario and variant names, file names, messages) put on the report's page:
// shown as the characters it holds, never read as Markdown or HTML (a `<script>` or an
// `<svg onload=...>` in a name is printed, not run), and always on one line.
#pragma once
#include <string>

namespace oomlab::report {

// For running text and table cells: control bytes as \xNN (printable_text), HTML's < > & as
// entities, Markdown's \\ ` [ ] | * backslash-escaped.
std::string markdown_text(const std::string& text);

// A code span (`text`) that holds `text` whatever backticks it has.
std::string markdown_code(const std::string& text);

}  // namespace oomlab::report
