#include "harness/replay/utf8_text.hpp"

namespace oomlab::replay {
namespace {

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

std::size_t repair_python_utf8(std::string& text) {
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    // Sequence length and the allowed range of the second byte (RFC 3629, table 3-7 of Unicode).
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      // ED A0..BF is a surrogate: Python's 'surrogatepass'; checked below, not refused.
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return i;
    }
    if (n - i < length) return i;
    const auto second = static_cast<unsigned char>(text[i + 1]);
    if (second < low || second > high) return i;
    for (std::size_t k = 2; k < length; ++k) {
      if (!is_continuation(static_cast<unsigned char>(text[i + k]))) return i;
    }
    if (lead == 0xED && second >= 0xA0) {  // U+D800..DFFF -> U+FFFD
      text[i] = static_cast<char>(0xEF);
      text[i + 1] = static_cast<char>(0xBF);
      text[i + 2] = static_cast<char>(0xBD);
    }
    i += length;
  }
  return kValidUtf8;
}

}  // namespace oomlab::replay
