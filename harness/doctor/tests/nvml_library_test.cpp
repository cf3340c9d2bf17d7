// NVML as the doctor loads it at run time: a missing library or one without NVML's symbols is one
// line in the checks, never a crash; through the stand-in library (fake_nvml.cpp) every fact is
// read the way the real one would give it.
#include "harness/doctor/nvml_library.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "harness/doctor/checks.hpp"
#include "harness/doctor/nvml_facts.hpp"
#include "harness/doctor/tests/machines.hpp"

namespace oomlab::doctor {
namespace {

using namespace oomlab::literals;

constexpr const char* kFakeBusId = "00000000:19:00.0";
constexpr int kFakeSelfPid = 1000;

NvmlFacts facts_from(const std::string& library_path, const std::string& bus_id = kFakeBusId) {
  const NvmlLibrary nvml(library_path);
  std::string release;
  return detail::read_nvml_facts(nvml, bus_id, kFakeSelfPid, release);
}

TEST(DoctorNvmlLibrary, TheDriversLibraryUnlessTheVariableNamesAnother) {
  const char* saved = std::getenv("OOMLAB_NVML_LIBRARY");
  const std::string restore = saved != nullptr ? saved : "";
  ::unsetenv("OOMLAB_NVML_LIBRARY");
  EXPECT_EQ(nvml_library_path(), "libnvidia-ml.so.1");
  ::setenv("OOMLAB_NVML_LIBRARY", "", 1);
  EXPECT_EQ(nvml_library_path(), "libnvidia-ml.so.1");
  ::setenv("OOMLAB_NVML_LIBRARY", "/opt/nvidia/libnvidia-ml.so.1", 1);
  EXPECT_EQ(nvml_library_path(), "/opt/nvidia/libnvidia-ml.so.1");
  if (saved != nullptr) {
    ::setenv("OOMLAB_NVML_LIBRARY", restore.c_str(), 1);
  } else {
    ::unsetenv("OOMLAB_NVML_LIBRARY");
  }
}

TEST(DoctorNvmlLibrary, AMissingLibraryIsOneLineInTheChecks) {
  NvmlLibrary nvml("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(nvml.loaded());
  EXPECT_EQ(nvml.error().rfind("NVML not found: /nonexistent/libnvidia-ml.so.1: cannot open", 0), 0u) << nvml.error();

  MachineFacts machine = testing::h200_machine();
  machine.nvml = facts_from("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(machine.nvml.processes_known);
  for (const Check& check : {check_mig(machine), check_ecc(machine), check_persistence(machine)}) {
    EXPECT_EQ(check.verdict, Verdict::skip) << check.name;
    EXPECT_EQ(check.detail.rfind("unknown (NVML not found: /nonexistent/libnvidia-ml.so.1", 0), 0u) << check.detail;
    EXPECT_EQ(check.detail.find('\n'), std::string::npos) << check.detail;
  }
}

TEST(DoctorNvmlLibrary, ALibraryWithoutNvmlsSymbolsIsNotUsed) {
  NvmlLibrary libc("libc.so.6");
  EXPECT_FALSE(libc.loaded());
  EXPECT_EQ(libc.error().rfind("NVML not usable", 0), 0u) << libc.error();
  EXPECT_NE(libc.error().find("nvmlInit_v2"), std::string::npos) << libc.error();
  EXPECT_EQ(facts_from("libc.so.6").error, libc.error());
}

TEST(DoctorNvmlLibrary, APathWithControlCharactersStaysOneLine) {
  NvmlLibrary nvml("/nonexistent/\nverdict: pass");
  EXPECT_FALSE(nvml.loaded());
  EXPECT_EQ(nvml.error().find('\n'), std::string::npos) << nvml.error();
  EXPECT_LE(NvmlLibrary(std::string(5000, 'x')).error().size(), 300u);
}

TEST(DoctorNvmlLibrary, EveryFactIsReadThroughTheLoadedEntryPoints) {
  NvmlLibrary nvml(OOMLAB_FAKE_NVML);
  ASSERT_TRUE(nvml.loaded()) << nvml.error();
  std::string release;
  NvmlFacts facts = detail::read_nvml_facts(nvml, kFakeBusId, kFakeSelfPid, release);
  EXPECT_EQ(facts.error, "");
  EXPECT_EQ(release, "580.159");
  EXPECT_EQ(facts.mig.current, Mode::off);
  EXPECT_EQ(facts.mig.pending, Mode::on);
  EXPECT_EQ(facts.ecc.current, Mode::on);
  EXPECT_EQ(facts.persistence.current, Mode::not_supported);
  ASSERT_TRUE(facts.processes_known);
  // The doctor itself (1000) is left out; 4242, listed as compute and graphics, counts once.
  ASSERT_EQ(facts.processes.size(), 3u);
  EXPECT_EQ(facts.processes[0].pid, 4242);
  EXPECT_EQ(facts.processes[0].bytes, std::optional<std::size_t>(3_GiB));
  EXPECT_FALSE(facts.processes[0].graphics_only);
  EXPECT_EQ(facts.processes[1].pid, 777);
  EXPECT_FALSE(facts.processes[1].bytes.has_value()) << "NVML_VALUE_NOT_AVAILABLE is unknown, not 16 EiB";
  EXPECT_EQ(facts.processes[2].pid, 55);
  EXPECT_TRUE(facts.processes[2].graphics_only);

  MachineFacts machine = testing::h200_machine();
  machine.nvml = facts;
  EXPECT_EQ(check_mig(machine).verdict, Verdict::warn) << check_mig(machine).detail;
  EXPECT_EQ(check_persistence(machine).detail, "not supported by this card");
}

TEST(DoctorNvmlLibrary, ADeviceNvmlDoesNotKnowIsNamed) {
  NvmlFacts facts = facts_from(OOMLAB_FAKE_NVML, "0000:ff:00.0");
  EXPECT_EQ(facts.error, "NVML: no device at PCI bus id 0000:ff:00.0: Not Found");
  EXPECT_FALSE(facts.processes_known);
}

}  // namespace
}  // namespace oomlab::doctor
