// For the parsers' tests: what a bad input is told.
#pragma once
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace oomlab::memory::testing {

// The message of the std::invalid_argument `parse()` throws; a test failure (naming `input`)
// and "" when it accepts the input instead.
template <typename Parse>
std::string invalid_argument_message(const std::string& input, Parse parse) {
  try {
    parse();
  } catch (const std::invalid_argument& e) {
    std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
    return message;
  }
  ADD_FAILURE() << "accepted '" << input << "'";
  return "";
}

}  // namespace oomlab::memory::testing
