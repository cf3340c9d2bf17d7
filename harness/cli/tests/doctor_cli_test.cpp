// `oomlab doctor` as a user runs it: one well-formed line per check and a verdict line, the same
// fields with --json, exit 1 only when a check fails, 2 on bad usage. Runs anywhere; on a machine
// without a GPU it checks that the doctor says so and still exits 0.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/doctor_output.hpp"
#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/device/device.hpp"

namespace oomlab::cli_test {
namespace {

// The environment variables the doctor reports, cleared so the machine's own do not leak in.
const std::map<std::string, std::string> kQuietEnvironment = {{"OOMLAB_ALLOC_CONF", ""}};

TEST(DoctorCli, EveryLineIsAVerdictAndTheLastOneSumsUp) {
  Result result = run_oomlab({"doctor"});
  EXPECT_EQ(result.err, "");
  ASSERT_TRUE(result.exit_code == 0 || result.exit_code == 1) << result.out;
  std::vector<DoctorLine> lines = parse_doctor_table(result.out);
  ASSERT_EQ(lines.size(), kDoctorCheckNames.size()) << result.out;
  for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i].name, kDoctorCheckNames[i]);
  const bool any_fail = result.out.find("\nfail ") != std::string::npos || result.out.rfind("fail ", 0) == 0;
  EXPECT_EQ(result.exit_code, any_fail ? 1 : 0) << result.out;
  EXPECT_EQ(result.out.find('\033'), std::string::npos) << "colour only on a terminal";
}

TEST(DoctorCli, WithoutGpuSaysSoAndPasses) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present: doctor_gpu_test covers this machine";
  Result result = run_oomlab({"doctor"}, kQuietEnvironment);
  // OOMLAB_ALLOC_CONF set to "" reads as an empty setting: valid, nothing changed.
  EXPECT_EQ(result.exit_code, 0) << result.out;
  std::vector<DoctorLine> lines = parse_doctor_table(result.out);
  ASSERT_FALSE(lines.empty()) << result.out;
  EXPECT_EQ(lines[0].name, "gpu");
  EXPECT_EQ(lines[0].verdict, "skip") << result.out;
  EXPECT_EQ(lines[0].detail.rfind("none", 0), 0u) << lines[0].detail;
  for (const DoctorLine& line : lines) {
    if (line.name == "memory" || line.name == "context" || line.name == "mig" || line.name == "ecc") {
      EXPECT_EQ(line.verdict, "skip") << line.name << ": " << line.detail;
    }
  }
  EXPECT_NE(result.out.find("\nverdict: pass; "), std::string::npos) << result.out;
}

// "3 ok, 9 skipped" alone read like nine problems: without a GPU the verdict says that nothing on
// the device was checked, and --json's summary says the same. An NVML library that cannot be
// loaded changes nothing here (no GPU to ask) and crashes nothing.
TEST(DoctorCli, WithoutGpuTheVerdictSaysNothingOnTheDeviceWasChecked) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present: doctor_gpu_test covers this machine";
  std::map<std::string, std::string> environment = kQuietEnvironment;
  environment["OOMLAB_NVML_LIBRARY"] = "/nonexistent/libnvidia-ml.so.1";
  Result table = run_oomlab({"doctor"}, environment);
  EXPECT_EQ(table.exit_code, 0) << table.out;
  const std::size_t verdict = table.out.find("\nverdict: pass; no GPU");
  ASSERT_NE(verdict, std::string::npos) << table.out;
  EXPECT_NE(table.out.find(": nothing to check on the device (", verdict), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(" skipped)\n", verdict), std::string::npos) << table.out;
  Result json = run_oomlab({"doctor", "--json"}, environment);
  nlohmann::json parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["verdict"], "pass");
  EXPECT_EQ("verdict: pass; " + parsed["summary"].get<std::string>() + "\n", table.out.substr(verdict + 1));
}

TEST(DoctorCli, JsonHasTheTablesFields) {
  Result table = run_oomlab({"doctor"}, kQuietEnvironment);
  Result json = run_oomlab({"doctor", "--json"}, kQuietEnvironment);
  EXPECT_EQ(json.exit_code, table.exit_code);
  EXPECT_EQ(json.err, "");
  nlohmann::json parsed = nlohmann::json::parse(json.out);
  std::vector<DoctorLine> lines = parse_doctor_table(table.out);
  ASSERT_EQ(parsed["checks"].size(), lines.size()) << json.out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const nlohmann::json& check = parsed["checks"][i];
    EXPECT_EQ(check.size(), 3u) << check.dump();
    EXPECT_EQ(check["name"], lines[i].name);
    EXPECT_EQ(check["verdict"], lines[i].verdict);
    EXPECT_TRUE(check["detail"].is_string());
  }
  EXPECT_EQ(parsed["exit_code"], json.exit_code);
  EXPECT_EQ(parsed["verdict"], json.exit_code == 0 ? "pass" : "fail");
  EXPECT_TRUE(parsed["summary"].is_string());
}

TEST(DoctorCli, BadOomlabAllocConfFails) {
  Result result = run_oomlab({"doctor"}, {{"OOMLAB_ALLOC_CONF", "max_split_size_mb:1"}});
  EXPECT_EQ(result.exit_code, 1) << result.out;
  bool found = false;
  for (const DoctorLine& line : parse_doctor_table(result.out)) {
    if (line.name != "OOMLAB_ALLOC_CONF") continue;
    found = true;
    EXPECT_EQ(line.verdict, "fail");
    EXPECT_NE(line.detail.find("max_split_size_mb must be >= 20"), std::string::npos) << line.detail;
  }
  EXPECT_TRUE(found) << result.out;
  EXPECT_NE(result.out.find("verdict: fail; "), std::string::npos) << result.out;
}

TEST(DoctorCli, PytorchAllocConfIsTranslated) {
  Result result = run_oomlab({"doctor"}, {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}});
  EXPECT_NE(result.out.find("OOMLAB_ALLOC_CONF=expandable_segments:true"), std::string::npos) << result.out;
}

// A PYTORCH_CUDA_ALLOC_CONF oomlab cannot reproduce was reported as "invalid OOMLAB_ALLOC_CONF":
// the line names the variable the user set.
TEST(DoctorCli, ABadPytorchAllocConfIsNamedAsItself) {
  Result result =
      run_oomlab({"doctor"}, {{"OOMLAB_ALLOC_CONF", ""}, {"PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:1"}});
  for (const DoctorLine& line : parse_doctor_table(result.out)) {
    if (line.name == "OOMLAB_ALLOC_CONF") EXPECT_EQ(line.verdict, "ok") << line.detail;
    if (line.name != "PYTORCH_CUDA_ALLOC_CONF") continue;
    EXPECT_EQ(line.verdict, "warn");
    EXPECT_NE(line.detail.find("PYTORCH_CUDA_ALLOC_CONF: invalid allocator settings"), std::string::npos)
        << line.detail;
    EXPECT_EQ(line.detail.find("OOMLAB_ALLOC_CONF"), std::string::npos) << line.detail;
  }
}

TEST(DoctorCli, HelpGivesTheExitCodes) {
  Result result = run_oomlab({"doctor", "--help"});
  EXPECT_EQ(result.exit_code, 0);
  for (const char* fragment : {"--json", "Exit 0", "1 if one fails", "2 on bad usage"}) {
    EXPECT_NE(result.out.find(fragment), std::string::npos) << fragment << " in:\n" << result.out;
  }
}

TEST(DoctorCli, UnknownOptionIsAUsageError) {
  expect_usage_error({"doctor", "--jsn"}, "--jsn");
  expect_usage_error({"doctor", "extra"}, "extra");
}

}  // namespace
}  // namespace oomlab::cli_test
