// The what-if's one-line verdict, from the same numbers the report prints beside it: a leak's
// verdict is the leak (no setting fixes one; when the budget runs out), a fix names its
// reserved peak, and "the live bytes exceed the budget" is said only when they do.
#pragma once
#include <string>

#include "harness/replay/replay_report.hpp"

namespace oomlab::replay {

// "verdict: ..." without a newline; empty without what-if rows.
std::string what_if_verdict(const ReplayReport& report);

}  // namespace oomlab::replay
