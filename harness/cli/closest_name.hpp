// "did you mean --variant?": the known name nearest a misspelt one, as git and cargo suggest.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace oomlab::cli {

// The name in `known` nearest `word` by edit distance (insert, delete, substitute, swap two
// neighbours), when it is near enough to be a typo: at most 2 edits and fewer than half the
// word's length. Empty when none is.
std::string closest_name(std::string_view word, const std::vector<std::string>& known);

}  // namespace oomlab::cli
