// oomlab run with a bound on its time and memory, for inputs that used to make it grow or hang:
// such a test fails (killed by SIGALRM, or out of memory) instead of taking the machine down.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "harness/cli/tests/run_oomlab.hpp"

namespace oomlab::cli_test {

struct Bounds {
  unsigned seconds = 30;
  unsigned long long address_space_bytes = 4ull << 30;
};

// `in_child` runs in the child just before exec (the pid stays oomlab's: a test can plant a file
// named after it, as another user would).
Result run_oomlab_bounded(const std::vector<std::string>& arguments, const Bounds& bounds,
                          const std::map<std::string, std::string>& environment = {},
                          const std::function<void()>& in_child = {});

// Bad input: exit 2 and exactly one "oomlab: error: " line naming `fragment`, within `bounds`.
void expect_bounded_usage_error(const std::vector<std::string>& arguments, const std::string& fragment,
                                const Bounds& bounds = {});

}  // namespace oomlab::cli_test
