// UTF-8 as Python's pickle writes it: str.encode('utf-8', 'surrogatepass'), so a lone surrogate
// (a file name that was not UTF-8 on disk, decoded with 'surrogateescape') arrives as the 3-byte
// sequence ED A0..BF xx, which is not valid UTF-8 and which JSON writers reject.
#pragma once
#include <cstddef>
#include <string>

namespace oomlab::replay {

constexpr std::size_t kValidUtf8 = static_cast<std::size_t>(-1);

// Replaces each encoded surrogate by U+FFFD (also 3 bytes) in place and returns kValidUtf8, or
// returns the index of the first byte that is not UTF-8 (text then unchanged past it).
std::size_t repair_python_utf8(std::string& text);

}  // namespace oomlab::replay
