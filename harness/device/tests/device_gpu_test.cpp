// Device(cuda) on a real GPU: copies through the compute stream, memsets, device info and the
// monitor's device-level numbers. Skipped (not passed) without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#if OOMLAB_WITH_CUDA
#include <cuda.h>
#include <dlfcn.h>
#endif

#include "harness/device/cuda_archs.hpp"
#include "harness/device/device.hpp"
#include "harness/device/monitor.hpp"
#include "harness/device/op_profiler.hpp"
#include "harness/device/stream_event.hpp"
#include "harness/device/tests/round_trip.hpp"
#include "harness/memory/size.hpp"
#include "harness/testing/random_bytes.hpp"
#include "harness/testing/require_gpu.hpp"

namespace oomlab {
namespace {

using testing::check_round_trip;
using testing::random_bytes;

using namespace oomlab::literals;

TEST(DeviceGpu, CopiesRoundTripOnTheComputeStream) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, {});
  EXPECT_EQ(device.source().name(), "cuda");
  EXPECT_NE(device.stream(), 0u);
  check_round_trip(device, 5_MiB + 77);
}

TEST(DeviceGpu, ExpandableSegmentsUseTheVmmSource) {
  OOMLAB_REQUIRE_GPU();
  memory::AllocatorConfig config;
  config.expandable_segments = true;
  Device device(DeviceKind::cuda, config);
  EXPECT_EQ(device.source().name(), "cuda_vmm");
  check_round_trip(device, 3_MiB + 5);
}

TEST(DeviceGpu, ExtraStreamsCopyAsync) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, {});
  auto stream = device.create_stream();
  ASSERT_NE(stream, 0u);
  auto input = random_bytes(1_MiB, 5);
  std::vector<std::uint8_t> output(1_MiB, 0);
  void* p = device.allocator().allocate(1_MiB, stream);
  device.copy_async(p, input.data(), input.size(), CopyKind::host_to_device, stream);
  device.copy_async(output.data(), p, output.size(), CopyKind::device_to_host, stream);
  // A device-to-host copy into pageable memory returns once the copy is done.
  EXPECT_EQ(output, input);
  device.allocator().deallocate(p);
  device.destroy_stream(stream);
}

// Streams ordered by a StreamEvent: a copy on another stream waits for the compute stream's
// fill; the profiler times ranges on the compute stream with CUDA events.
TEST(DeviceGpu, StreamEventsOrderStreamsAndTheProfilerTimesRanges) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, {});
  OpProfiler profiler(device);
  auto other = device.create_stream();
  void* p = device.allocator().allocate(256_MiB, device.stream());
  {
    ProfileRange range("fill");
    device.memset(p, 0x5A, 256_MiB);
  }
  StreamEvent filled(DeviceKind::cuda);
  filled.record(device.stream());
  filled.make_stream_wait(other);
  std::vector<std::uint8_t> tail(4096, 0);
  device.copy_async(tail.data(), static_cast<char*>(p) + 256_MiB - tail.size(), tail.size(),
                    CopyKind::device_to_host, other);
  device.synchronize();
  for (std::uint8_t byte : tail) ASSERT_EQ(byte, 0x5A);
  const auto totals = profiler.totals();
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].name, "fill");
  EXPECT_GT(totals[0].milliseconds, 0.0);
  device.allocator().deallocate(p);
  device.destroy_stream(other);
}

TEST(DeviceGpu, InfoReportsNameMemoryAndVersions) {
  OOMLAB_REQUIRE_GPU();
  DeviceInfo info = query_device_info(DeviceKind::cuda);
  EXPECT_EQ(info.kind, "cuda");
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.total_memory, 1_GiB);
  EXPECT_GE(info.compute_major, 5);
  EXPECT_GT(info.driver_version, 0);
  EXPECT_GT(info.runtime_version, 0);
}

TEST(DeviceGpu, MonitorSeesDeviceLevelMemory) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, {});
  DeviceMonitor monitor(device, std::chrono::milliseconds(1));
  void* p = device.allocator().allocate(256_MiB);
  monitor.stop();
  EXPECT_TRUE(monitor.error().empty()) << monitor.error();
  // Device-level used memory includes the context and the 256 MiB segment.
  EXPECT_GE(monitor.peak_used(), 256_MiB) << "method " << monitor.method();
  device.allocator().deallocate(p);
}

// The driver's choice of image on this GPU is the one cuda_archs.cpp predicts from the list: the
// rules the fat build and the engine choice rely on, checked against the real thing for each
// build ci/gpu.sh makes (fat, 80, 80-virtual, 75).
TEST(CudaCodeGpu, TheDriverLoadsThePredictedImage) {
  OOMLAB_REQUIRE_GPU();
  EXPECT_EQ(cuda_code_problem(), "");
  const CurrentCudaCode& code = current_cuda_code();
  const std::optional<CudaImage> predicted = select_cuda_image(built_cuda_architectures(), code.device);
  ASSERT_TRUE(predicted.has_value()) << "built for " << built_cuda_architectures_text();
  EXPECT_EQ(code.image.code, predicted->code) << describe_cuda_image(code.image) << " vs "
                                              << describe_cuda_image(*predicted);
  EXPECT_EQ(code.image.arch_specific, predicted->arch_specific);
  EXPECT_EQ(code.image.jit, predicted->jit);
  std::printf("%s (%s) runs %s of this binary (built for %s)\n", code.device_name.c_str(),
              code.device.text().c_str(), describe_cuda_image(code.image).c_str(), built_cuda_architectures_text());
}

// The start-up check decides without a CUDA context (the process that starts the runs must not
// hold one: its memory would show in every run's device-level numbers), and agrees with the
// driver. Each ctest test is its own process, so no context exists before; run together with
// other tests in one process (compute-sanitizer) it may, and then the check is skipped.
TEST(CudaCodeGpu, StartupCheckCreatesNoContextAndAgreesWithTheDriver) {
  OOMLAB_REQUIRE_GPU();
#if OOMLAB_WITH_CUDA
  // The driver API from the driver itself (dlopen): linking libcuda would stop this program from
  // even starting, to report "skipped", on a machine without the driver (CI).
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(driver, nullptr) << dlerror();
  const auto init = reinterpret_cast<decltype(&cuInit)>(dlsym(driver, "cuInit"));
  const auto device_get = reinterpret_cast<decltype(&cuDeviceGet)>(dlsym(driver, "cuDeviceGet"));
  const auto context_state =
      reinterpret_cast<decltype(&cuDevicePrimaryCtxGetState)>(dlsym(driver, "cuDevicePrimaryCtxGetState"));
  ASSERT_TRUE(init && device_get && context_state);
  CUdevice device = 0;
  ASSERT_EQ(init(0), CUDA_SUCCESS);
  ASSERT_EQ(device_get(&device, 0), CUDA_SUCCESS);
  unsigned flags = 0;
  int active = 0;
  ASSERT_EQ(context_state(device, &flags, &active), CUDA_SUCCESS);
  if (active != 0) GTEST_SKIP() << "a CUDA context exists already in this process";
  const std::string startup = startup_cuda_code_problem();
  ASSERT_EQ(context_state(device, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 0) << "the start-up check created a CUDA context";
  EXPECT_EQ(startup, "");
  EXPECT_EQ(cuda_code_problem(), "");
#endif
}

// A binary without code for this GPU: the start-up check's one line, never a crash. ci/gpu.sh's
// noimage stage runs this with the sm_80 build and CUDA_DISABLE_PTX_JIT=1 (its SASS cannot run on
// a Hopper, its PTX may not be compiled), OOMLAB_EXPECT_NO_CUDA_CODE=1.
TEST(CudaCodeGpu, MissingCodeIsOneLine) {
  OOMLAB_REQUIRE_GPU();
  if (std::getenv("OOMLAB_EXPECT_NO_CUDA_CODE") == nullptr) {
    GTEST_SKIP() << "needs a binary without code for this GPU (OOMLAB_EXPECT_NO_CUDA_CODE=1, ci/gpu.sh noimage)";
  }
  const std::string startup = startup_cuda_code_problem();  // the rules, no context
  EXPECT_NE(startup.find("has no GPU code for"), std::string::npos) << startup;
  const std::string line = cuda_code_problem();  // the driver
  std::printf("%s\n%s\n", startup.c_str(), line.c_str());
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  for (const char* part : {"has no GPU code for", "compute capability", "built for", "-DCMAKE_CUDA_ARCHITECTURES="}) {
    EXPECT_NE(line.find(part), std::string::npos) << part << " in: " << line;
  }
  EXPECT_THROW(current_cuda_code(), std::runtime_error);
}

}  // namespace
}  // namespace oomlab
