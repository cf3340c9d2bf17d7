// A result set: what `oomlab compare` and `oomlab report` read from one path. A path is
//  - a run record (`oomlab run --out`), or an array of them;
//  - a baseline (results/baselines/<device>-<scale>/*.json, baseline_file.hpp);
//  - Google Benchmark JSON (benchmark_json.hpp);
//  - a folder: every such file under it (suite folders, results/h200, ...), its suite.json
//    read for whether the suite completed; other JSON files are skipped with a note.
// A file that cannot be read or holds none of these is an InputError naming it; so is one that is
// not a regular file or is over the caps of input_file.hpp (checked before reading), and a record
// whose numbers no run can have (record_numbers.hpp).
#pragma once
#include <string>
#include <vector>

#include "harness/report/benchmark_json.hpp"
#include "harness/runner/run_record.hpp"

namespace oomlab::report {

struct LoadedRecord {
  RunRecord record;
  std::string file;       // relative to the set's root ("suite/x.json"); the file name for a file
  bool baseline = false;  // read from a baseline: timings, throughput and build facts are absent
};

struct ResultSet {
  std::string source;  // the path given
  std::vector<LoadedRecord> records;
  std::vector<BenchmarkResult> benchmarks;
  std::vector<std::string> benchmark_devices;  // the GPUs the benchmark files name, once each
  std::vector<std::string> notes;  // "suite/suite.json says the suite did not complete", skips

  bool empty() const { return records.empty() && benchmarks.empty(); }
  // "34 run records (cuda NVIDIA H200, dry), 120 benchmarks (NVIDIA H200)".
  std::string describe() const;
};

// Throws InputError when `path` is missing, unreadable, not JSON oomlab reads, or holds nothing.
ResultSet load_result_set(const std::string& path);

// What load_result_set reads from one file named `name`, from `text` held in memory (no suite.json
// redirect): the fuzz target's way in.
ResultSet result_set_from_text(const std::string& text, const std::string& name);

}  // namespace oomlab::report
