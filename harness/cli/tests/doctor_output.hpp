// Reading `oomlab doctor`'s table back in the tests: every line must be "VERDICT NAME  DETAIL",
// then one "verdict: pass|fail; ..." line; anything else is a test failure.
#pragma once
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace oomlab::cli_test {

// The checks in the order the doctor prints them.
inline const std::vector<std::string> kDoctorCheckNames = {
    "gpu",     "driver", "runtime", "arch",        "memory",            "processes",
    "context", "mig",    "ecc",     "persistence", "OOMLAB_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"};

struct DoctorLine {
  std::string verdict, name, detail;
};

inline std::vector<DoctorLine> parse_doctor_table(const std::string& out) {
  static const std::regex check_line("^(ok|warn|fail|skip) +([A-Za-z_]+)  +(\\S.*)$");
  static const std::regex verdict_line("^verdict: (pass|fail); \\S.*$");
  std::vector<DoctorLine> lines;
  std::istringstream in(out);
  std::string line;
  bool verdict_seen = false;
  while (std::getline(in, line)) {
    std::smatch match;
    if (verdict_seen) {
      ADD_FAILURE() << "a line after the verdict: " << line;
    } else if (std::regex_match(line, match, check_line)) {
      lines.push_back({match[1], match[2], match[3]});
    } else if (std::regex_match(line, verdict_line)) {
      verdict_seen = true;
    } else {
      ADD_FAILURE() << "not a doctor line: '" << line << "'";
    }
  }
  EXPECT_TRUE(verdict_seen) << "no verdict line in:\n" << out;
  return lines;
}

}  // namespace oomlab::cli_test
