// The one assertion the doctor's check tests make: a check's verdict, and fragments of its detail.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/doctor/checks.hpp"

namespace oomlab::doctor::testing {

// The check came to `verdict` and its detail contains `fragment`; else the whole check is shown.
inline ::testing::AssertionResult has(const Check& check, Verdict verdict, const std::string& fragment) {
  if (check.verdict == verdict && check.detail.find(fragment) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << check.name << ": " << verdict_name(check.verdict) << " "
                                       << check.detail << " (wanted " << verdict_name(verdict)
                                       << " with '" << fragment << "')";
}

// has() for every fragment.
inline ::testing::AssertionResult has_all(const Check& check, Verdict verdict,
                                          const std::vector<std::string>& fragments) {
  for (const std::string& fragment : fragments) {
    ::testing::AssertionResult result = has(check, verdict, fragment);
    if (!result) return result;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace oomlab::doctor::testing
