// advise: the seed's decision tree walked on the user's failing run. Each candidate remedy is a
// real run on dry (full scale in milliseconds): the run as given first, then — unless it leaks
// (sent to the leak site) or the memory is outside the allocator (sent to doctor) — the
// allocator's settings, the scenario's own remedies (its other variants, with the user's knobs),
// one knob at a time (bf16, fused attention, checkpointing, accumulation, offload), a smaller
// validation batch, the largest batch that fits, and when nothing fits alone, the remedies
// stacked in the tree's order. The cheapest fix that fits is the one with the best measured
// throughput among those whose cost is known (committed results, or --confirm runs on the GPU);
// with none known, the first in the tree's order of cost is named, and not called cheapest. A
// run that fits but whose leak detector saw growth is sent to the leak, as an OOM by leak is.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "harness/runner/runner.hpp"

namespace oomlab::advise {

struct Candidate {
  std::string step;          // the tree's step: "bf16 mixed precision", "smaller batch"
  std::string change;        // how to ask for it: "--variant bf16", "--set checkpointing=true"
  std::string trade;         // what it costs, in words
  int rank = 0;              // the tree's order of cost (lower: cheaper) when none is measured
  bool changes_answers = false;  // the run computes other results (VariantSpec::changes_answers)
  RunRequest request;        // the run that tests it
  // Filled by trying it on dry:
  bool fits = false;
  std::size_t need = 0;      // peak live bytes under the budget when it fits, else with no cap (0: unknown)
  std::string outcome;       // "ok", "oom (capacity)", "not applicable: ..."
  double throughput = 0;     // measured or committed; 0: unknown
  std::string throughput_unit;
  std::string throughput_source;  // "committed results/h200/...", "confirmed on cuda"
};

struct Advice {
  RunRecord as_given;                 // the run as the user gave it, on dry
  std::vector<std::string> path;      // the tree's questions and answers, in order
  std::vector<Candidate> candidates;  // in the order tried
  std::optional<std::size_t> best;    // index of the fix to take: the cheapest measured one, else
                                      // the first that fits in the tree's order of cost
  bool best_is_measured = false;      // best's cost was measured (committed records or --confirm)
  bool stop_at_diagnosis = false;     // a leak or outside memory: no memory remedy applies
};

struct AdviseOptions {
  std::string results_dir;   // committed records to take costs from ("": none)
  bool confirm = false;      // run each fitting candidate on cuda for its throughput
};

// Throws std::invalid_argument for a bad request (checked with resolve_run first).
Advice advise(const RunRequest& base, const AdviseOptions& options = {});

}  // namespace oomlab::advise
