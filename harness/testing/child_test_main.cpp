// main() for tests that run variants in child processes: the child is this binary again.
#include <gtest/gtest.h>

#include <string>

#include "harness/runner/runner.hpp"

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == oomlab::kChildCommand) {
    return oomlab::child_main(argc, argv);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
