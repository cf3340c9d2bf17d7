// main() for GoogleTest programs that spawn workers (re-execute themselves): the worker check
// comes first, exactly as in oomlab's own main(). Add this file to the test's SOURCES (not to a
// library: gtest_main's main() would be linked instead of it).
#include <gtest/gtest.h>

#include "harness/process/worker.hpp"

int main(int argc, char** argv) {
  int exit_code = 0;
  if (oomlab::process::run_worker_if_requested(argc, argv, exit_code)) return exit_code;
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
