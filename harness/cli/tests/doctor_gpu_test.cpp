// `oomlab doctor` on a real GPU (the H200): the device lines pass and carry measured numbers, and
// a process holding GPU memory (this test, playing the stale process of the RTX 4060 Ti story) is
// named with its pid and fails the check. Skipped, not passed, without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/doctor_output.hpp"
#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/device/device.hpp"
#include "harness/memory/size.hpp"
#include "harness/testing/require_gpu.hpp"

namespace oomlab::cli_test {
namespace {

using namespace oomlab::literals;

const std::map<std::string, std::string> kQuietEnvironment = {{"OOMLAB_ALLOC_CONF", ""}};

std::map<std::string, DoctorLine> by_name(const std::string& out) {
  std::map<std::string, DoctorLine> lines;
  for (const DoctorLine& line : parse_doctor_table(out)) lines[line.name] = line;
  return lines;
}

TEST(DoctorGpu, DeviceLinesPassWithMeasuredNumbers) {
  OOMLAB_REQUIRE_GPU();
  Result result = run_oomlab({"doctor"}, kQuietEnvironment);
  EXPECT_EQ(result.exit_code, 0) << "nothing should fail on the GPU machine:\n" << result.out;
  auto lines = by_name(result.out);
  ASSERT_EQ(lines.size(), kDoctorCheckNames.size()) << result.out;
  EXPECT_EQ(lines["gpu"].verdict, "ok") << lines["gpu"].detail;
  EXPECT_NE(lines["gpu"].detail.find(", compute "), std::string::npos) << lines["gpu"].detail;
  EXPECT_EQ(lines["driver"].verdict, "ok") << lines["driver"].detail;
  EXPECT_NE(lines["driver"].detail.find(">= runtime"), std::string::npos) << lines["driver"].detail;
  EXPECT_EQ(lines["runtime"].verdict, "ok") << lines["runtime"].detail;
  EXPECT_NE(lines["arch"].verdict, "fail") << lines["arch"].detail;
  EXPECT_NE(lines["arch"].detail.find("the driver loaded"), std::string::npos) << lines["arch"].detail;
  // warn would say the h200 profile's budget exceeds what is free here: a fact about the profile.
  EXPECT_TRUE(lines["memory"].verdict == "ok" || lines["memory"].verdict == "warn") << lines["memory"].detail;
  EXPECT_NE(lines["memory"].detail.find("free with this process's context"), std::string::npos);
  // The context is measured in a second process: it worked, and it is a plausible size.
  EXPECT_TRUE(lines["context"].verdict == "ok" || lines["context"].verdict == "warn") << lines["context"].detail;
  EXPECT_NE(lines["context"].detail.find("MiB per process"), std::string::npos) << lines["context"].detail;
  EXPECT_NE(lines["processes"].verdict, "skip") << lines["processes"].detail;
  // NVML is loaded from the driver at run time in every build: a GPU machine always has it.
  for (const char* name : {"mig", "ecc", "persistence"}) {
    EXPECT_NE(lines[name].verdict, "skip") << name << ": " << lines[name].detail;
  }
}

// Share of the card this test holds: past the doctor's 10% line, so the check must fail.
constexpr double kHeldShare = 0.15;

TEST(DoctorGpu, AProcessHoldingMemoryIsNamedAndFails) {
  OOMLAB_REQUIRE_GPU();
  Device device(DeviceKind::cuda, memory::AllocatorConfig{});
  const std::size_t held =
      static_cast<std::size_t>(kHeldShare * static_cast<double>(query_device_info(DeviceKind::cuda).total_memory));
  void* block = device.allocator().allocate(held);
  device.memset(block, 0, held);  // touched, so the driver has really backed it

  RunningOomlab doctor({"doctor", "--json"}, kQuietEnvironment);
  const int doctor_pid = doctor.pid();
  Result result = doctor.finish();
  device.allocator().deallocate(block);

  EXPECT_EQ(result.exit_code, 1) << result.out;
  nlohmann::json parsed = nlohmann::json::parse(result.out);
  std::string processes;
  for (const nlohmann::json& check : parsed["checks"]) {
    if (check["name"] == "processes") {
      EXPECT_EQ(check["verdict"], "fail") << check.dump();
      processes = check["detail"];
    }
  }
  const std::string self = "pid " + std::to_string(::getpid()) + " ";
  EXPECT_NE(processes.find(self), std::string::npos) << "this test is not named: " << processes;
  EXPECT_EQ(processes.find("pid " + std::to_string(doctor_pid) + " "), std::string::npos)
      << "the doctor listed itself: " << processes;
  EXPECT_NE(processes.find("% of the card"), std::string::npos) << processes;
}

}  // namespace
}  // namespace oomlab::cli_test
