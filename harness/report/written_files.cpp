#include "harness/report/written_files.hpp"

#include <filesystem>

namespace oomlab::report {

namespace {

bool warned(const RunRecord& record, const char* prefix) {
  for (const std::string& warning : record.warnings) {
    if (warning.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

bool written(const std::string& path, const RunRecord& record, const char* not_written) {
  std::error_code error;
  return !path.empty() && record.outcome.status != OutcomeStatus::crash && !warned(record, not_written) &&
         std::filesystem::exists(path, error);
}

}  // namespace

std::vector<std::string> written_file_notes(const RunRequest& request, const RunRecord& record) {
  const std::string name = record.scenario + "/" + record.variant;
  std::vector<std::string> notes;
  if (written(request.trace_path, record, kTraceNotWritten)) {
    notes.push_back("oomlab: trace of " + name + " written to " + request.trace_path +
                    " (open it in https://ui.perfetto.dev)");
  }
  if (record.outcome.status == OutcomeStatus::oom && written(request.oom_dump_path, record, kOomDumpNotWritten)) {
    notes.push_back("oomlab: OOM dump of " + name + " written to " + request.oom_dump_path +
                    " (the last allocator events and every segment at the OOM; open it in "
                    "https://ui.perfetto.dev; --no-oom-dump turns it off)");
  }
  return notes;
}

std::string oom_dump_path_beside(const std::string& record_path, const std::string& variant) {
  const std::filesystem::path path(record_path);
  std::filesystem::path stem = path;
  if (path.extension() == ".json") stem.replace_extension();
  return stem.string() + (variant.empty() ? "" : "." + variant) + ".oom.json";
}

}  // namespace oomlab::report
