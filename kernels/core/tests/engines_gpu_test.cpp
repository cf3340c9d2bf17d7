// The engine choice on this GPU: what current_engine() picks is what the pure rules predict for
// this binary's architecture list, allow_wgmma switches wgmma off, and a kernel that needs
// tensor cores either runs or refuses with the requirement line.
#include <gtest/gtest.h>

#include <cstdio>

#include "harness/device/cuda_archs.hpp"
#include "harness/testing/require_gpu.hpp"
#include "kernels/core/engines.hpp"
#include "kernels/core/wgmma_device.hpp"

namespace oomlab::ops {
namespace {

TEST(EnginesGpu, CurrentEngineIsThePredictedOne) {
  OOMLAB_REQUIRE_GPU();
  const CurrentCudaCode& code = current_cuda_code();
  EXPECT_STREQ(engine_name(current_engine()),
               engine_name(choose_engine(code.device, built_cuda_architectures(), true)));
  {
    detail::WgmmaOff off;
    EXPECT_NE(current_engine(), TensorCoreEngine::wgmma);
    EXPECT_FALSE(detail::device_runs_wgmma());
  }
  for (const KernelEngine& e : current_kernel_engines()) std::printf("%s: %s\n", e.family.c_str(), e.engine.c_str());
}

TEST(EnginesGpu, RequireTensorCoresRunsOrSaysWhy) {
  OOMLAB_REQUIRE_GPU();
  if (current_engine() == TensorCoreEngine::none) {
    try {
      require_tensor_cores("test op");
      ADD_FAILURE() << "no tensor-core engine, yet no refusal";
    } catch (const UnsupportedDevice& e) {
      EXPECT_NE(std::string(e.what()).find("test op needs compute capability 8.0"), std::string::npos) << e.what();
    }
  } else {
    EXPECT_NO_THROW(require_tensor_cores("test op"));
  }
}

}  // namespace
}  // namespace oomlab::ops
