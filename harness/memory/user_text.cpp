// Capped, escaped quotes of user input for error messages.
#include "harness/memory/user_text.hpp"

#include <cstdio>

namespace oomlab {
namespace {

std::string escaped(char c) {
  auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte != 0x7f) return std::string(1, c);
  char hex[8];
  std::snprintf(hex, sizeof hex, "\\x%02x", byte);
  return hex;
}

}  // namespace

std::string quote_user_text(std::string_view text, std::size_t max_chars) {
  std::string inside;
  std::size_t used = 0;  // input characters quoted so far
  for (; used < text.size(); ++used) {
    std::string piece = escaped(text[used]);
    if (inside.size() + piece.size() > max_chars) break;
    inside += piece;
  }
  if (used == text.size()) return "'" + inside + "'";
  return "'" + inside + "...' (" + std::to_string(text.size()) + " chars)";
}

std::string printable_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) out += escaped(c);
  return out;
}

std::string_view trim_blanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace oomlab
