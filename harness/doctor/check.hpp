// One doctor check's answer, and what a list of them adds up to (the verdict line, exit code).
#pragma once
#include <string>
#include <vector>

namespace oomlab::doctor {

// ok: fine; warn: works, but worth knowing (exit code stays 0); fail: this will cost a run
// memory or stop it (exit code 1); skip: could not be checked here (no GPU, no NVML).
enum class Verdict { ok, warn, fail, skip };
const char* verdict_name(Verdict verdict);  // "ok", "warn", "fail", "skip"

struct Check {
  std::string name;    // "driver", "processes", "OOMLAB_ALLOC_CONF"
  Verdict verdict = Verdict::skip;
  std::string detail;  // one line: the facts, then the fix when there is one
};

struct Summary {
  int ok = 0, warn = 0, fail = 0, skip = 0;
  int exit_code = 0;   // 1 when any check failed, else 0
  std::string line;    // "1 failed (processes); 1 warning (context); 8 ok, 2 skipped"
};
// `device_unchecked`: why nothing on the device was checked (device_unchecked_reason), said
// before the counts so that "9 skipped" is not read as nine problems; empty with a GPU.
Summary summarize(const std::vector<Check>& checks, const std::string& device_unchecked = "");

}  // namespace oomlab::doctor
