// CUDA architecture lists, the driver's choice of image per GPU and the start-up line, without a
// GPU: the rules the fat build relies on (README.md, "Building for your GPU").
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/device/cuda_archs.hpp"
#include "harness/device/device.hpp"

namespace oomlab {
namespace {

const char* const kDefaultList = "75-real;80;86-real;89-real;90a-real;100-real;120";

// "sm_90a", "compute_80 PTX (JIT)" or "none" for the image `list` gives `device`.
std::string image_on(const char* list, ComputeCapability device) {
  const std::optional<CudaImage> image = select_cuda_image(parse_cuda_architectures(list), device);
  return image ? describe_cuda_image(*image) : "none";
}

TEST(CudaArchs, ParsesCMakeSpellings) {
  const std::vector<CudaArch> archs = parse_cuda_architectures(kDefaultList);
  ASSERT_EQ(archs.size(), 7u);
  EXPECT_EQ(archs[0].cc, (ComputeCapability{7, 5}));
  EXPECT_TRUE(archs[0].sass);
  EXPECT_FALSE(archs[0].ptx);
  EXPECT_TRUE(archs[1].sass && archs[1].ptx);  // "80": both
  EXPECT_TRUE(archs[4].arch_specific);         // "90a-real"
  EXPECT_EQ(archs[4].suffix(), "90a");
  EXPECT_EQ(archs[5].cc, (ComputeCapability{10, 0}));
  EXPECT_EQ(archs[6].cc, (ComputeCapability{12, 0}));
  const std::vector<CudaArch> ptx = parse_cuda_architectures("80-virtual, 120-virtual");
  ASSERT_EQ(ptx.size(), 2u);
  EXPECT_TRUE(ptx[0].ptx && !ptx[0].sass);
  EXPECT_TRUE(parse_cuda_architectures("").empty());  // a CPU-only build
}

TEST(CudaArchs, RejectsWhatIsNotAnArchitecture) {
  for (const char* bad : {"native", "all", "sm_80", "9", "1200", "90b", "80-fake", "80;;x"}) {
    EXPECT_THROW(parse_cuda_architectures(bad), std::invalid_argument) << bad;
  }
  try {
    parse_cuda_architectures("80;sm_90");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'sm_90'"), std::string::npos) << e.what();
  }
}

TEST(CudaArchs, DescribesSassThenPtx) {
  EXPECT_EQ(describe_cuda_architectures(parse_cuda_architectures(kDefaultList)),
            "sm_75 sm_80 sm_86 sm_89 sm_90a sm_100 sm_120 + PTX compute_80 compute_120");
  EXPECT_EQ(describe_cuda_architectures(parse_cuda_architectures("80-virtual")), "PTX compute_80");
  EXPECT_EQ(describe_cuda_architectures({}), "no GPU code");
}

// The default list runs on every card from 7.5 up, each on its own SASS where it has one.
TEST(CudaArchs, TheDefaultListHasCodeForEveryCardFromTuringUp) {
  EXPECT_EQ(image_on(kDefaultList, {7, 5}), "sm_75");            // T4, RTX 20xx
  EXPECT_EQ(image_on(kDefaultList, {8, 0}), "sm_80");            // A100
  EXPECT_EQ(image_on(kDefaultList, {8, 6}), "sm_86");            // RTX 30xx, A10
  EXPECT_EQ(image_on(kDefaultList, {8, 7}), "sm_86");            // Orin: binary-compatible
  EXPECT_EQ(image_on(kDefaultList, {8, 9}), "sm_89");            // RTX 40xx, L4, L40S
  EXPECT_EQ(image_on(kDefaultList, {9, 0}), "sm_90a");           // H100, H200
  EXPECT_EQ(image_on(kDefaultList, {10, 0}), "sm_100");          // B200
  EXPECT_EQ(image_on(kDefaultList, {10, 3}), "sm_100");          // B300
  EXPECT_EQ(image_on(kDefaultList, {11, 0}), "compute_80 PTX (JIT)");  // Thor: no 11.x SASS
  EXPECT_EQ(image_on(kDefaultList, {12, 0}), "sm_120");          // RTX 50xx
  EXPECT_EQ(image_on(kDefaultList, {12, 1}), "sm_120");          // DGX Spark
  EXPECT_EQ(image_on(kDefaultList, {13, 0}), "compute_120 PTX (JIT)");  // a GPU after these
}

TEST(CudaArchs, SassRunsOnlyWithinItsMajorVersionAndPtxOnlyUpwards) {
  EXPECT_EQ(image_on("80-real", {9, 0}), "none");                // an A100 binary on an H200
  EXPECT_EQ(image_on("80", {9, 0}), "compute_80 PTX (JIT)");     // ... with its PTX: JIT
  EXPECT_EQ(image_on("80-virtual", {9, 0}), "compute_80 PTX (JIT)");
  EXPECT_EQ(image_on("75", {9, 0}), "compute_75 PTX (JIT)");
  EXPECT_EQ(image_on("86-real", {8, 0}), "none");                // SASS never runs on an older minor
  EXPECT_EQ(image_on("90a-real", {10, 0}), "none");              // "a" code runs on exactly 9.0
  EXPECT_EQ(image_on("90a", {10, 0}), "none");                   // its PTX too
  EXPECT_EQ(image_on("90a", {9, 0}), "sm_90a");
  EXPECT_EQ(image_on("80;90a-virtual", {9, 0}), "compute_90a PTX (JIT)");
  EXPECT_EQ(image_on("90-real;90a-real", {9, 0}), "sm_90");      // generic where both fit
  EXPECT_EQ(image_on("", {9, 0}), "none");
}

TEST(CudaArchs, PtxJitDisabledOrForcedChangesThePick) {
  const std::vector<CudaArch> sm80 = parse_cuda_architectures("80");
  EXPECT_FALSE(select_cuda_image(sm80, {9, 0}, PtxJit::disabled).has_value());  // sm_80 SASS cannot run on 9.0
  EXPECT_TRUE(select_cuda_image(sm80, {8, 0}, PtxJit::disabled).has_value());
  const std::optional<CudaImage> forced = select_cuda_image(sm80, {8, 0}, PtxJit::forced);
  ASSERT_TRUE(forced.has_value());
  EXPECT_TRUE(forced->jit);
  EXPECT_FALSE(select_cuda_image(parse_cuda_architectures("80-real"), {8, 0}, PtxJit::forced).has_value());
}

TEST(CudaArchs, NoCodeMessageSaysWhatWasBuiltTheCapabilityAndHowToRebuild) {
  const std::string line = no_cuda_code_message("Tesla T4", {7, 5}, parse_cuda_architectures("80;90a-real"),
                                                "cudaErrorNoKernelImageForDevice");
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one line";
  for (const char* part : {"Tesla T4", "compute capability 7.5", "built for sm_80 sm_90a + PTX compute_80",
                           "cudaErrorNoKernelImageForDevice", "-DCMAKE_CUDA_ARCHITECTURES=75 "}) {
    EXPECT_NE(line.find(part), std::string::npos) << part << " in: " << line;
  }
  EXPECT_NE(no_cuda_code_message("NVIDIA H200", {9, 0}, {}, "").find("=90a "), std::string::npos);
}

TEST(CudaArchs, ThisBinarysListParses) {
  EXPECT_NO_THROW(built_cuda_architectures());
  EXPECT_EQ(built_cuda_architectures().size(),
            parse_cuda_architectures(built_cuda_architectures_text()).size());
#if OOMLAB_WITH_CUDA
  EXPECT_FALSE(built_cuda_architectures().empty()) << "a CUDA build names its architectures";
#else
  EXPECT_TRUE(built_cuda_architectures().empty());
#endif
}

TEST(CudaArchs, StartUpCheckIsQuietWithoutAGpu) {
  // Without a usable GPU there is nothing to check (cuda_available() explains); with one, this
  // binary must have code for it (the GPU test checks that side).
  if (!cuda_available()) {
    EXPECT_EQ(cuda_code_problem(), "");
    EXPECT_EQ(startup_cuda_code_problem(), "");
  }
}

}  // namespace
}  // namespace oomlab
