// File names built from record fields (a chart per scenario and scale): a record is input, and
// its scenario may be "../../etc/x" or hold a "/" or a NUL. The stem keeps only characters safe
// in any file system and never names a folder or a hidden file, so the file stays where oomlab
// puts it.
#pragma once
#include <string>

namespace oomlab::report {

// Letters, digits, '-', '_', '.' and '+' kept, anything else '_', a leading '.' '_', at most 80
// bytes; "" -> "_". "gpt_train-full" stays, "../../x" -> "_.._.._x".
std::string safe_file_stem(const std::string& text);

}  // namespace oomlab::report
