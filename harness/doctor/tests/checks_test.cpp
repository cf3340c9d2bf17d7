// Each check's verdicts from injected facts: the healthy GPU machine, a machine without a GPU,
// and one broken fact at a time.
#include "harness/doctor/checks.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "harness/doctor/tests/has_verdict.hpp"
#include "harness/doctor/tests/machines.hpp"

namespace oomlab::doctor {
namespace {

using namespace oomlab::literals;
using testing::h200_machine;
using testing::has;
using testing::no_gpu_machine;
using testing::rtx4060ti_machine;

TEST(DoctorChecks, HealthyGpuMachinePassesEveryCheck) {
  const std::vector<Check> checks = run_checks(h200_machine());
  ASSERT_EQ(checks.size(), 12u);
  for (const Check& check : checks) EXPECT_EQ(check.verdict, Verdict::ok) << check.name << ": " << check.detail;
  EXPECT_TRUE(has(checks[0], Verdict::ok, "NVIDIA H200, compute 9.0, device 0 of 1"));
  EXPECT_TRUE(has(checks[1], Verdict::ok, "580.159 (CUDA 13.0) >= runtime 13.0"));
  EXPECT_TRUE(has(checks[3], Verdict::ok, "compute 9.0 runs sm_90a; built for sm_90a"));
  EXPECT_TRUE(has(checks[6], Verdict::ok, "profile h200 assumes 529.00MiB"));
  EXPECT_EQ(summarize(checks).exit_code, 0);
}

TEST(DoctorChecks, WithoutGpuTheGpuChecksAreSkippedAndNothingFails) {
  const std::vector<Check> checks = run_checks(no_gpu_machine());
  EXPECT_TRUE(has(checks[0], Verdict::skip, "none: no NVIDIA driver or device"));
  EXPECT_TRUE(has(checks[0], Verdict::skip, "cudaErrorInsufficientDriver"));
  for (const char* name : {"driver", "arch", "memory", "context", "mig", "ecc", "persistence"}) {
    for (const Check& check : checks) {
      if (check.name != name) continue;
      EXPECT_EQ(check.verdict, Verdict::skip) << name << ": " << check.detail;
    }
  }
  EXPECT_TRUE(has(check_runtime(no_gpu_machine()), Verdict::ok, "13.0"));
  EXPECT_TRUE(has(check_processes(no_gpu_machine()), Verdict::ok, "no /dev/nvidia* files"));
  Summary summary = summarize(checks, device_unchecked_reason(no_gpu_machine()));
  EXPECT_EQ(summary.exit_code, 0);
  EXPECT_EQ(summary.fail, 0);
}

// "3 ok, 9 skipped" alone read like nine problems: the line says first that there is no GPU.
TEST(DoctorChecks, WithoutGpuTheSummarySaysNothingOnTheDeviceWasChecked) {
  const MachineFacts facts = no_gpu_machine();
  Summary summary = summarize(run_checks(facts), device_unchecked_reason(facts));
  EXPECT_EQ(summary.line.rfind("no GPU: nothing to check on the device (", 0), 0u) << summary.line;
  EXPECT_NE(summary.line.find(" skipped)"), std::string::npos) << summary.line;

  MachineFacts cpu_build = facts;
  cpu_build.build = {false, ""};
  EXPECT_EQ(device_unchecked_reason(cpu_build).rfind("no GPU (oomlab was built without CUDA)", 0), 0u);
  MachineFacts broken_driver = facts;
  broken_driver.versions.driver_cuda = 12020;
  EXPECT_EQ(device_unchecked_reason(broken_driver).rfind("no usable GPU", 0), 0u);
  EXPECT_EQ(device_unchecked_reason(h200_machine()), "");

  std::vector<Check> checks = {{"OOMLAB_ALLOC_CONF", Verdict::fail, ""}, {"gpu", Verdict::skip, ""}};
  EXPECT_EQ(summarize(checks, device_unchecked_reason(facts)).line,
            "1 failed (OOMLAB_ALLOC_CONF); no GPU: nothing to check on the device (0 ok, 1 skipped)");
}

TEST(DoctorChecks, CpuOnlyBuildSaysSo) {
  MachineFacts facts = no_gpu_machine();
  facts.build = {false, ""};
  facts.versions = {};
  for (const Check& check : {check_gpu(facts), check_driver(facts), check_runtime(facts), check_architecture(facts)}) {
    EXPECT_TRUE(has(check, Verdict::skip, "built without CUDA")) << check.name;
  }
}

TEST(DoctorChecks, GpuUnusableDespiteADriverFails) {
  MachineFacts facts = no_gpu_machine();
  facts.versions.driver_cuda = 13000;
  facts.gpu.unavailable_reason = "cannot create a CUDA context: cudaErrorMemoryAllocation (out of memory)";
  facts.env.cuda_visible_devices = "0";
  EXPECT_TRUE(has(check_gpu(facts), Verdict::fail, "cudaErrorMemoryAllocation"));
  EXPECT_TRUE(has(check_gpu(facts), Verdict::fail, "CUDA_VISIBLE_DEVICES='0'"));
}

TEST(DoctorChecks, DriverOlderThanRuntimeFailsWithTheFix) {
  MachineFacts facts = h200_machine();
  facts.versions.driver_cuda = 12040;
  facts.versions.driver_release = "550.54.14";
  Check check = check_driver(facts);
  EXPECT_TRUE(has(check, Verdict::fail, "550.54.14 (CUDA 12.4) is older than runtime 13.0"));
  EXPECT_TRUE(has(check, Verdict::fail, "580.65.06 or newer"));
}

TEST(DoctorChecks, DriverOlderMinorVersionWarns) {
  MachineFacts facts = h200_machine();
  facts.versions = {12020, 12080, 12080, "535.104.05"};
  EXPECT_TRUE(has(check_driver(facts), Verdict::warn, "minor-version compatibility"));
}

TEST(DoctorChecks, NoDriverIsSkippedNotFailed) {
  EXPECT_TRUE(has(check_driver(no_gpu_machine()), Verdict::skip, "no NVIDIA driver"));
}

TEST(DoctorChecks, RuntimeOtherThanTheToolkitWarns) {
  MachineFacts facts = h200_machine();
  facts.versions.runtime = 12080;
  EXPECT_TRUE(has(check_runtime(facts), Verdict::warn, "built with toolkit 13.0"));
}

TEST(DoctorChecks, CapabilityMissingFromTheBuildFailsWithTheRebuild) {
  MachineFacts facts = rtx4060ti_machine();
  facts.build.cuda_architectures = "90a-real";  // a Hopper-only build on a 4060 Ti
  Check check = check_architecture(facts);
  EXPECT_TRUE(has(check, Verdict::fail, "NVIDIA GeForce RTX 4060 Ti (compute capability 8.9)"));
  EXPECT_TRUE(has(check, Verdict::fail, "-DCMAKE_CUDA_ARCHITECTURES=89"));
  EXPECT_TRUE(has(check_architecture(rtx4060ti_machine()), Verdict::ok, "compute 8.9 runs sm_89"));
}

TEST(DoctorChecks, TheDriversAnswerWinsOverTheList) {
  MachineFacts facts = h200_machine();
  facts.gpu.loaded_image = "sm_90a";
  EXPECT_TRUE(has(check_architecture(facts), Verdict::ok, "the driver loaded sm_90a"));
  facts.gpu.code_problem = "this oomlab binary has no GPU code for NVIDIA H200";
  EXPECT_TRUE(has(check_architecture(facts), Verdict::fail, "no GPU code for NVIDIA H200"));
}

TEST(DoctorChecks, PtxOnlyMatchWarnsAboutJit) {
  MachineFacts facts = h200_machine();
  facts.build.cuda_architectures = "80";
  EXPECT_TRUE(has(check_architecture(facts), Verdict::warn, "compute_80 PTX (JIT)"));
}

TEST(DoctorChecks, UnreadableArchitectureListWarns) {
  MachineFacts facts = h200_machine();
  facts.build.cuda_architectures = "sm_90";
  EXPECT_TRUE(has(check_architecture(facts), Verdict::warn, "sm_90"));
}

TEST(DoctorChecks, FreeMemoryBelowTheCardsProfileWarns) {
  MachineFacts facts = rtx4060ti_machine();
  facts.gpu.free_bytes -= 3_GiB;
  EXPECT_TRUE(has(check_memory(facts), Verdict::warn, "less than the rtx4060ti-16g budget"));
  EXPECT_TRUE(has(check_memory(rtx4060ti_machine()), Verdict::ok, "fits the rtx4060ti-16g budget"));
}

TEST(DoctorChecks, ProfileIsChosenByNameAndMemory) {
  GpuFacts gpu = rtx4060ti_machine().gpu;
  ASSERT_NE(profile_for_device(gpu), nullptr);
  EXPECT_EQ(profile_for_device(gpu)->name, "rtx4060ti-16g");
  gpu.total_bytes = 8188 * MiB;
  EXPECT_EQ(profile_for_device(gpu)->name, "rtx4060ti-8g");
  gpu.name = "NVIDIA GeForce RTX 4060 Ti Super";
  EXPECT_EQ(profile_for_device(gpu), nullptr);
}

TEST(DoctorChecks, ContextAgainstTheProfile) {
  MachineFacts facts = rtx4060ti_machine();
  facts.gpu.context_bytes = 612 * MiB;
  EXPECT_TRUE(has(check_context(facts), Verdict::warn,
                  "profile rtx4060ti-16g assumes 450.00MiB: a run here has 162.00MiB less"));
  facts.gpu.context_bytes = 480 * MiB;  // within the tolerance
  EXPECT_TRUE(has(check_context(facts), Verdict::ok, "480.00MiB per process"));
  facts.gpu.name = "NVIDIA L4";
  EXPECT_TRUE(has(check_context(facts), Verdict::ok, "no profile for this card"));
  facts.gpu.context_bytes.reset();
  facts.gpu.context_error = "the measuring process did not finish in 60 s";
  EXPECT_TRUE(has(check_context(facts), Verdict::skip, "did not finish"));
}

TEST(DoctorChecks, MigOnWarns) {
  MachineFacts facts = h200_machine();
  facts.nvml.mig = {Mode::on, Mode::on};
  EXPECT_TRUE(has(check_mig(facts), Verdict::warn, "one MIG instance"));
  facts.nvml.mig = {Mode::off, Mode::on};
  EXPECT_TRUE(has(check_mig(facts), Verdict::warn, "on after the next GPU reset"));
}

TEST(DoctorChecks, NvmlChecksWithoutNvmlAreSkipped) {
  MachineFacts facts = h200_machine();
  facts.nvml = NvmlFacts{};
  facts.nvml.error = "NVML not found: libnvidia-ml.so.1: cannot open shared object file: No such file";
  for (const Check& check : {check_mig(facts), check_ecc(facts), check_persistence(facts)}) {
    EXPECT_TRUE(has(check, Verdict::skip, "unknown (NVML not found: libnvidia-ml.so.1: cannot open")) << check.name;
  }
  facts = h200_machine();
  facts.nvml.error = "NVML: nvmlInit: Driver Not Loaded";
  EXPECT_TRUE(has(check_ecc(facts), Verdict::skip, "unknown (NVML: nvmlInit: Driver Not Loaded)"));
  EXPECT_TRUE(has(check_mig(no_gpu_machine()), Verdict::skip, "no GPU to ask"));
}

TEST(DoctorChecks, GeForceModes) {
  MachineFacts facts = rtx4060ti_machine();
  EXPECT_TRUE(has(check_mig(facts), Verdict::ok, "not supported by this card"));
  EXPECT_TRUE(has(check_ecc(facts), Verdict::ok, "not supported by this card"));
  EXPECT_TRUE(has(check_persistence(facts), Verdict::ok, "nvidia-smi -pm 1"));
  facts.nvml.ecc = {Mode::off, Mode::on};
  EXPECT_TRUE(has(check_ecc(facts), Verdict::warn, "on after the next reboot"));
}

// Each allocator variable set, then unset: OOMLAB_ALLOC_CONF fails with the parser's message or
// shows what it parsed; PYTORCH_CUDA_ALLOC_CONF is shown with whether oomlab accepts it.
TEST(DoctorChecks, AllocConfVariablesAreParsedAndShown) {
  struct Case {
    Check (*check)(const MachineFacts&);
    std::optional<std::string> EnvFacts::*variable;
    const char* value;
    Verdict verdict;
    const char* fragment;
  };
  const auto oomlab = &EnvFacts::oomlab_alloc_conf;
  const auto pytorch = &EnvFacts::pytorch_alloc_conf;
  const Case cases[] = {
      {check_oomlab_alloc_conf, oomlab, "max_split_size_mb:10", Verdict::fail, "max_split_size_mb must be >= 20"},
      {check_oomlab_alloc_conf, oomlab, "expandable_segments:true,max_split_size_mb:128", Verdict::ok,
       "max_split_size_mb:128,expandable_segments:true"},
      {check_pytorch_alloc_conf, pytorch, "expandable_segments:True", Verdict::ok,
       "OOMLAB_ALLOC_CONF=expandable_segments:true"},
      {check_pytorch_alloc_conf, pytorch, "backend:cudaMallocAsync", Verdict::warn, "does not model"},
  };
  for (const Case& c : cases) {
    MachineFacts facts = h200_machine();
    facts.env.*c.variable = c.value;
    EXPECT_TRUE(has(c.check(facts), c.verdict, c.fragment));
    EXPECT_TRUE(has(c.check(h200_machine()), Verdict::ok, "not set"));
  }
}

TEST(DoctorChecks, LongUserInputIsQuotedAndCapped) {
  MachineFacts facts = h200_machine();
  facts.env.oomlab_alloc_conf = std::string(5000, 'x') + "\n";
  facts.env.pytorch_alloc_conf = std::string(5000, 'y');
  facts.env.cuda_visible_devices = std::string(5000, '1');
  for (const Check& check : {check_oomlab_alloc_conf(facts), check_pytorch_alloc_conf(facts), check_gpu(facts)}) {
    EXPECT_LT(check.detail.size(), 400u) << check.name;
    EXPECT_EQ(check.detail.find('\n'), std::string::npos) << check.name;
  }
}

TEST(DoctorChecks, SummaryNamesFailuresAndWarnings) {
  std::vector<Check> checks = {{"gpu", Verdict::ok, ""},
                               {"processes", Verdict::fail, ""},
                               {"context", Verdict::warn, ""},
                               {"mig", Verdict::skip, ""}};
  Summary summary = summarize(checks);
  EXPECT_EQ(summary.exit_code, 1);
  EXPECT_EQ(summary.line, "1 failed (processes); 1 warning (context); 1 ok, 1 skipped");
}

}  // namespace
}  // namespace oomlab::doctor
