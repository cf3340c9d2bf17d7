// main() for test programs that spawn workers: the worker check comes first, as in oomlab's main.
#include <gtest/gtest.h>

#include "harness/process/worker.hpp"

int main(int argc, char** argv) {
  int exit_code = 0;
  if (oomlab::process::run_worker_if_requested(argc, argv, exit_code)) return exit_code;
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
