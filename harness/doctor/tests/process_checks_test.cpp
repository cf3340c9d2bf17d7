// The processes check: a stale process holding 3 GiB of a 16 GiB card (the RTX 4060 Ti user whose
// PyTorch run OOMs), a desktop's display server, and what /proc alone can and cannot tell.
#include <gtest/gtest.h>

#include <string>

#include "harness/doctor/checks.hpp"
#include "harness/doctor/tests/machines.hpp"

namespace oomlab::doctor {
namespace {

using namespace oomlab::literals;
using testing::process;
using testing::rtx4060ti_machine;

TEST(DoctorProcesses, NobodyElseIsOk) {
  Check check = check_processes(rtx4060ti_machine());
  EXPECT_EQ(check.verdict, Verdict::ok) << check.detail;
  EXPECT_NE(check.detail.find("none besides this one holds GPU memory"), std::string::npos) << check.detail;
}

TEST(DoctorProcesses, AnotherProcessHolding3GiBFailsAndIsNamed) {
  MachineFacts facts = rtx4060ti_machine();
  facts.nvml.processes = {process(4242, "python3", 3_GiB, 'T')};
  facts.gpu.free_bytes -= 3_GiB;
  Check check = check_processes(facts);
  EXPECT_EQ(check.verdict, Verdict::fail) << check.detail;
  for (const char* fragment : {"pid 4242 'python3' (alice, stopped) 3.00GiB", "together 3.00GiB (19% of the card)",
                               "kill PID"}) {
    EXPECT_NE(check.detail.find(fragment), std::string::npos) << fragment << " in: " << check.detail;
  }
}

TEST(DoctorProcesses, ASmallHolderWarns) {
  MachineFacts facts = rtx4060ti_machine();
  facts.nvml.processes = {process(31, "ollama", 512_MiB)};
  Check check = check_processes(facts);
  EXPECT_EQ(check.verdict, Verdict::warn) << check.detail;
  EXPECT_NE(check.detail.find("1 other process on the GPU: pid 31 'ollama'"), std::string::npos) << check.detail;
}

TEST(DoctorProcesses, DisplayServerAloneNeverFails) {
  MachineFacts facts = rtx4060ti_machine();
  GpuProcess xorg = process(977, "Xorg", 2_GiB);
  xorg.graphics_only = true;
  facts.nvml.processes = {xorg};
  Check check = check_processes(facts);
  EXPECT_EQ(check.verdict, Verdict::warn) << check.detail;
  EXPECT_NE(check.detail.find("graphics"), std::string::npos) << check.detail;
}

TEST(DoctorProcesses, ProcessInAnotherPidNamespaceIsShownByPid) {
  MachineFacts facts = rtx4060ti_machine();
  GpuProcess hidden = process(123456, "", 6_GiB);
  hidden.user.clear();
  facts.nvml.processes = {hidden};
  Check check = check_processes(facts);
  EXPECT_EQ(check.verdict, Verdict::fail) << check.detail;
  EXPECT_NE(check.detail.find("pid 123456 (not visible here"), std::string::npos) << check.detail;
}

TEST(DoctorProcesses, ManyProcessesStayOnOneLine) {
  MachineFacts facts = rtx4060ti_machine();
  for (int pid = 100; pid < 110; ++pid) facts.nvml.processes.push_back(process(pid, "worker", 16_MiB));
  Check check = check_processes(facts);
  EXPECT_NE(check.detail.find("and 6 more"), std::string::npos) << check.detail;
  EXPECT_EQ(check.detail.find("pid 105"), std::string::npos) << check.detail;
}

// Without NVML: /proc names the holders, cudaMemGetInfo says how much the others hold together.
TEST(DoctorProcesses, WithoutNvmlTheScanAndFreeMemoryDecide) {
  MachineFacts facts = rtx4060ti_machine();
  facts.nvml = NvmlFacts{};
  facts.nvml.error = "NVML not found: libnvidia-ml.so.1: cannot open shared object file";
  facts.device_files.holders = {process(4242, "python3", std::nullopt)};
  facts.gpu.free_bytes -= 3_GiB;
  Check check = check_processes(facts);
  EXPECT_EQ(check.verdict, Verdict::fail) << check.detail;
  EXPECT_NE(check.detail.find("pid 4242 'python3' (alice)"), std::string::npos) << check.detail;
  EXPECT_NE(check.detail.find("together 3.00GiB"), std::string::npos) << check.detail;
}

TEST(DoctorProcesses, DeviceOpenersNvmlDoesNotListAreNamedNotCounted) {
  MachineFacts facts = rtx4060ti_machine();
  facts.device_files.holders = {process(2, "nvtop", std::nullopt)};
  Check check = check_processes(facts);
  EXPECT_EQ(check.verdict, Verdict::ok) << check.detail;
  EXPECT_NE(check.detail.find("no GPU memory in NVML's list: pid 2 'nvtop'"), std::string::npos) << check.detail;

  facts.nvml.processes = {process(1, "python3", 1_GiB)};
  facts.device_files.holders.push_back(process(1, "python3", std::nullopt));
  check = check_processes(facts);
  EXPECT_EQ(check.verdict, Verdict::warn) << check.detail;
  EXPECT_NE(check.detail.find("1 other process on the GPU: pid 1 'python3'"), std::string::npos) << check.detail;
  EXPECT_NE(check.detail.find("NVML's list: pid 2 'nvtop'"), std::string::npos) << check.detail;
}

TEST(DoctorProcesses, UnreadableProcessesAreNotClaimedFree) {
  MachineFacts facts = rtx4060ti_machine();
  facts.nvml = NvmlFacts{};
  facts.device_files.unreadable = 12;
  Check check = check_processes(facts);
  EXPECT_EQ(check.verdict, Verdict::warn) << check.detail;
  EXPECT_NE(check.detail.find("12 processes of other users could not be inspected"), std::string::npos) << check.detail;
  EXPECT_NE(check.detail.find("sudo fuser -v /dev/nvidia*"), std::string::npos) << check.detail;
}

TEST(DoctorProcesses, UnreadableProcAndNoNvmlIsUnknown) {
  MachineFacts facts = rtx4060ti_machine();
  facts.nvml = NvmlFacts{};
  facts.device_files.proc_readable = false;
  EXPECT_EQ(check_processes(facts).verdict, Verdict::skip);
}

}  // namespace
}  // namespace oomlab::doctor
