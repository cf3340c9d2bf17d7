// Verdict names and the summary line.
#include "harness/doctor/check.hpp"

namespace oomlab::doctor {
namespace {

// "1 failed (processes)", "2 warnings (context, persistence)".
std::string counted(int count, const char* one, const char* many, const std::string& names) {
  return std::to_string(count) + " " + (count == 1 ? one : many) + " (" + names + ")";
}

}  // namespace

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::ok: return "ok";
    case Verdict::warn: return "warn";
    case Verdict::fail: return "fail";
    case Verdict::skip: return "skip";
  }
  return "?";
}

Summary summarize(const std::vector<Check>& checks, const std::string& device_unchecked) {
  Summary summary;
  std::string failed, warned;
  for (const Check& check : checks) {
    switch (check.verdict) {
      case Verdict::ok: ++summary.ok; break;
      case Verdict::skip: ++summary.skip; break;
      case Verdict::warn:
        ++summary.warn;
        warned += (warned.empty() ? "" : ", ") + check.name;
        break;
      case Verdict::fail:
        ++summary.fail;
        failed += (failed.empty() ? "" : ", ") + check.name;
        break;
    }
  }
  summary.exit_code = summary.fail > 0 ? 1 : 0;
  std::string line;
  if (summary.fail > 0) line += counted(summary.fail, "failed", "failed", failed) + "; ";
  if (summary.warn > 0) line += counted(summary.warn, "warning", "warnings", warned) + "; ";
  const std::string counts = std::to_string(summary.ok) + " ok, " + std::to_string(summary.skip) + " skipped";
  line += device_unchecked.empty() ? counts : device_unchecked + " (" + counts + ")";
  summary.line = line;
  return summary;
}

}  // namespace oomlab::doctor
