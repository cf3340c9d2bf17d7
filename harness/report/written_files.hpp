// The lines `oomlab run` and `oomlab suite` print for the files a run wrote besides its record:
// the trace the user asked for (under its per-variant name) and the OOM dump.
#pragma once
#include <string>
#include <vector>

#include "harness/runner/run_record.hpp"
#include "harness/runner/runner.hpp"

namespace oomlab::report {

// "oomlab: trace of gpt_train/broken written to trace.broken.json (open it in https://ui.perfetto.dev)",
// "oomlab: OOM dump of srgan_leak/broken written to r.broken.oom.json (...)". Nothing for a file
// that was not written (a crash, or a warning saying why).
std::vector<std::string> written_file_notes(const RunRequest& request, const RunRecord& record);

// Where an OOM dump goes beside a record file: "r.json" -> "r.broken.oom.json" for a file of
// several variants (oomlab run --out), "x.broken.dry-full.json" -> "x.broken.dry-full.oom.json"
// with no variant (a suite's one record per file).
std::string oom_dump_path_beside(const std::string& record_path, const std::string& variant);

}  // namespace oomlab::report
