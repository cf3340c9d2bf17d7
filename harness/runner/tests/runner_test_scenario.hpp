// A test-only scenario with one variant per outcome the runner must record.
#pragma once
#include "harness/memory/size.hpp"

namespace oomlab::runner_test {

inline constexpr const char* kRunnerTestScenario = "runner-test";
inline constexpr int kRunnerTestSteps = 3;
inline constexpr int kOomStep = 1;                        // the oom variant fails in this step
inline constexpr std::size_t kRunnerTestBudget = 64 * MiB;
inline constexpr std::size_t kVariantMaxSplit = 32 * MiB;  // what configure() sets for "ok"

}  // namespace oomlab::runner_test
