// The processes check: a stale process holding 3 GiB of a 16 GiB card (the RTX 4060 Ti user whose
// PyTorch run OOMs), a desktop's display server, and what /proc alone can and cannot tell.
#include <gtest/gtest.h>

#include <string>

#include "harness/doctor/checks.hpp"
#include "harness/doctor/tests/has_verdict.hpp"
#include "harness/doctor/tests/machines.hpp"

namespace oomlab::doctor {
namespace {

using namespace oomlab::literals;
using testing::has;
using testing::has_all;
using testing::process;
using testing::rtx4060ti_machine;

TEST(DoctorProcesses, NobodyElseIsOk) {
  EXPECT_TRUE(has(check_processes(rtx4060ti_machine()), Verdict::ok, "none besides this one holds GPU memory"));
}

TEST(DoctorProcesses, AnotherProcessHolding3GiBFailsAndIsNamed) {
  MachineFacts facts = rtx4060ti_machine();
  facts.nvml.processes = {process(4242, "python3", 3_GiB, 'T')};
  facts.gpu.free_bytes -= 3_GiB;
  EXPECT_TRUE(has_all(check_processes(facts), Verdict::fail,
                      {"pid 4242 'python3' (alice, stopped) 3.00GiB", "together 3.00GiB (19% of the card)",
                       "kill PID"}));
}

TEST(DoctorProcesses, ASmallHolderWarns) {
  MachineFacts facts = rtx4060ti_machine();
  facts.nvml.processes = {process(31, "ollama", 512_MiB)};
  EXPECT_TRUE(has(check_processes(facts), Verdict::warn, "1 other process on the GPU: pid 31 'ollama'"));
}

TEST(DoctorProcesses, DisplayServerAloneNeverFails) {
  MachineFacts facts = rtx4060ti_machine();
  GpuProcess xorg = process(977, "Xorg", 2_GiB);
  xorg.graphics_only = true;
  facts.nvml.processes = {xorg};
  EXPECT_TRUE(has(check_processes(facts), Verdict::warn, "graphics"));
}

TEST(DoctorProcesses, ProcessInAnotherPidNamespaceIsShownByPid) {
  MachineFacts facts = rtx4060ti_machine();
  GpuProcess hidden = process(123456, "", 6_GiB);
  hidden.user.clear();
  facts.nvml.processes = {hidden};
  EXPECT_TRUE(has(check_processes(facts), Verdict::fail, "pid 123456 (not visible here"));
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
  EXPECT_TRUE(has_all(check_processes(facts), Verdict::fail, {"pid 4242 'python3' (alice)", "together 3.00GiB"}));
}

TEST(DoctorProcesses, DeviceOpenersNvmlDoesNotListAreNamedNotCounted) {
  MachineFacts facts = rtx4060ti_machine();
  facts.device_files.holders = {process(2, "nvtop", std::nullopt)};
  EXPECT_TRUE(has(check_processes(facts), Verdict::ok, "no GPU memory in NVML's list: pid 2 'nvtop'"));

  facts.nvml.processes = {process(1, "python3", 1_GiB)};
  facts.device_files.holders.push_back(process(1, "python3", std::nullopt));
  EXPECT_TRUE(has_all(check_processes(facts), Verdict::warn,
                      {"1 other process on the GPU: pid 1 'python3'", "NVML's list: pid 2 'nvtop'"}));
}

TEST(DoctorProcesses, UnreadableProcessesAreNotClaimedFree) {
  MachineFacts facts = rtx4060ti_machine();
  facts.nvml = NvmlFacts{};
  facts.device_files.unreadable = 12;
  EXPECT_TRUE(has_all(check_processes(facts), Verdict::warn,
                      {"12 processes of other users could not be inspected", "sudo fuser -v /dev/nvidia*"}));
}

TEST(DoctorProcesses, UnreadableProcAndNoNvmlIsUnknown) {
  MachineFacts facts = rtx4060ti_machine();
  facts.nvml = NvmlFacts{};
  facts.device_files.proc_readable = false;
  EXPECT_EQ(check_processes(facts).verdict, Verdict::skip);
}

}  // namespace
}  // namespace oomlab::doctor
