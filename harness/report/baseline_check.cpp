#include "harness/report/baseline_check.hpp"

#include "harness/report/baseline_file.hpp"
#include "harness/report/record_fields.hpp"
#include "harness/report/record_match.hpp"

namespace oomlab::report {

BaselineCheck check_against_baselines(const std::string& baseline_folder, const std::vector<LoadedRecord>& records) {
  const ResultSet baselines = load_result_set(baseline_folder);
  const RecordMatch match = match_records(baselines.records, records);
  BaselineCheck check;
  for (const RecordPair& pair : match.pairs) {
    ++check.compared;
    const FieldScope scope = pair.across_devices ? FieldScope::allocator : FieldScope::all;
    const auto changes = field_differences(pair.a->record, pair.b->record, scope);
    if (changes.empty()) continue;
    std::string line = record_name(pair.b->record) + ": ";
    for (std::size_t i = 0; i < changes.size(); ++i) line += (i ? "; " : "") + changes[i];
    check.failures.push_back(line);
  }
  for (const LoadedRecord* record : match.only_b) {
    check.failures.push_back(record_name(record->record) + " (" + record_setting(record->record) +
                             ") has no baseline in " + baseline_folder + "; regenerate with: " +
                             regenerate_command(record->record.device.kind, record->record.scale));
  }
  for (const LoadedRecord* baseline : match.only_a) {
    check.failures.push_back(record_name(baseline->record) + " has a baseline (" + baseline->file +
                             ") but did not run");
  }
  return check;
}

}  // namespace oomlab::report
