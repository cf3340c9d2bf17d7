// The project's one file writer. A regular file (or a new one) either keeps its old contents or
// has all the new ones, never part of them (temp file in the same directory, fsync, rename). What
// the user named is respected: a symlink is followed and its target written; a FIFO or a
// character device (/dev/stdout, a pipe, /dev/null) is written in place, as `> path` would; any
// other kind of file (a directory, a socket, a block device) is refused, never replaced.
#pragma once
#include <string>
#include <string_view>

namespace oomlab {

// Throws std::runtime_error naming `path` (and the reason) on any failure; the temp file is
// removed and an existing file at `path` is left as it was.
void write_file_atomically(const std::string& path, std::string_view contents);

// The whole file; throws std::runtime_error naming `path` when it cannot be read.
std::string read_text_file(const std::string& path);

// Whether write_file_atomically(path) can be expected to succeed, checked before a long run: a
// regular file's directory lets this process create a file there (tried, not guessed: /proc
// refuses), a FIFO or character device is writable, nothing else is in the way. Empty when
// fine, else the reason.
std::string why_not_writable(const std::string& path);

}  // namespace oomlab
