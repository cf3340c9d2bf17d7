// The project's one file writer: a file either keeps its old contents or has all the new
// ones, never part of them (temp file in the same directory, fsync, rename).
#pragma once
#include <string>
#include <string_view>

namespace oomlab {

// Throws std::runtime_error naming `path` (and the reason) on any failure; the temp file is
// removed and an existing file at `path` is left as it was.
void write_file_atomically(const std::string& path, std::string_view contents);

// The whole file; throws std::runtime_error naming `path` when it cannot be read.
std::string read_text_file(const std::string& path);

// Whether write_file_atomically(path) can be expected to succeed: the directory exists and is
// writable and `path` is not a directory. Empty when fine, else the reason (for early errors).
std::string why_not_writable(const std::string& path);

}  // namespace oomlab
