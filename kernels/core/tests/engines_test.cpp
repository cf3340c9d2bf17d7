// The engine choice (engines.hpp) without a GPU: which engine each card takes from each build,
// and the line a kernel ends with where it cannot run.
#include <gtest/gtest.h>

#include <string>

#include "harness/device/cuda_archs.hpp"
#include "kernels/core/engines.hpp"

namespace oomlab::ops {
namespace {

const char* const kDefaultList = "75-real;80;86-real;89-real;90a-real;100-real;120";

std::string engine_on(const char* list, ComputeCapability device, bool allow_wgmma = true) {
  return engine_name(choose_engine(device, parse_cuda_architectures(list), allow_wgmma));
}

TEST(Engines, TheDefaultBuildTakesWgmmaOnlyOnHopper) {
  EXPECT_EQ(engine_on(kDefaultList, {7, 5}), "none");  // T4: no bf16 tensor cores, no cp.async
  for (ComputeCapability ampere_class : {ComputeCapability{8, 0}, {8, 6}, {8, 9}, {10, 0}, {11, 0}, {12, 0}}) {
    EXPECT_EQ(engine_on(kDefaultList, ampere_class), "mma.sync") << ampere_class.text();
  }
  EXPECT_EQ(engine_on(kDefaultList, {9, 0}), "wgmma");
  EXPECT_EQ(engine_on(kDefaultList, {9, 0}, false), "mma.sync");  // allow_wgmma(false): tests, benches
}

TEST(Engines, HopperWithoutAnSm90aImageRunsTheAmpereEngines) {
  EXPECT_EQ(engine_on("80", {9, 0}), "mma.sync");          // compute_80 PTX JIT-compiled
  EXPECT_EQ(engine_on("80-virtual", {9, 0}), "mma.sync");
  EXPECT_EQ(engine_on("90", {9, 0}), "mma.sync");          // generic sm_90: no wgmma in it
  EXPECT_EQ(engine_on("90a-real", {9, 0}), "wgmma");
  EXPECT_EQ(engine_on("75", {9, 0}), "none");              // compute_75 code has no mma.sync kernels
  EXPECT_EQ(engine_on("90a-real", {8, 0}), "none");        // no image at all (start-up says so)
}

TEST(Engines, TheRequirementLineNamesWhatIsNeededAndWhatIsThere) {
  CurrentCudaCode t4{"Tesla T4", {7, 5}, {{7, 5}, false, false}};
  const std::string on_t4 = tensor_core_requirement("fused attention (forward)", t4);
  EXPECT_EQ(on_t4, "fused attention (forward) needs compute capability 8.0 or newer (bf16 tensor cores, "
                   "cp.async); Tesla T4 is 7.5");
  CurrentCudaCode jit{"NVIDIA H200", {9, 0}, {{7, 5}, false, true}};
  const std::string on_h200 = tensor_core_requirement("conv2d", jit);
  EXPECT_EQ(on_h200.find('\n'), std::string::npos);
  for (const char* part : {"conv2d needs compute capability 8.0", "compute_75 PTX (JIT) code on NVIDIA H200 (9.0)",
                           "-DCMAKE_CUDA_ARCHITECTURES=90a"}) {
    EXPECT_NE(on_h200.find(part), std::string::npos) << part << " in: " << on_h200;
  }
}

TEST(Engines, TheRecordNamesEachFamilysEngine) {
  auto engines_of = [](ComputeCapability device, CudaImage image, bool allow) {
    std::string text;
    for (const KernelEngine& e : kernel_engines(device, image, allow)) text += e.family + "=" + e.engine + " ";
    return text;
  };
  EXPECT_EQ(engines_of({9, 0}, {{9, 0}, true, false}, true),
            "attention_forward=mma.sync attention_backward=wgmma attention_naive=cublas conv=wgmma matmul=cublasLt ");
  EXPECT_EQ(engines_of({8, 6}, {{8, 6}, false, false}, true),
            "attention_forward=mma.sync attention_backward=mma.sync attention_naive=cublas conv=mma.sync "
            "matmul=cublasLt ");
  EXPECT_NE(engines_of({7, 5}, {{7, 5}, false, false}, true).find("conv=none (needs compute 8.0)"),
            std::string::npos);
}

}  // namespace
}  // namespace oomlab::ops
