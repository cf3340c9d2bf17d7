// GPU tests call OOMLAB_REQUIRE_GPU() first: without a usable GPU the test is reported as
// skipped (ctest matches "[  SKIPPED ]"), never as passed.
#pragma once
#include <gtest/gtest.h>

#include "harness/device/device.hpp"

#define OOMLAB_REQUIRE_GPU()                                                     \
  do {                                                                           \
    if (!::oomlab::cuda_available()) GTEST_SKIP() << "no usable CUDA device";    \
  } while (0)
