// Recordings of the synthetic training program at several batch sizes, as the CLI would load
// them, and the truth: the program's own snapshot at the target replayed as `oomlab replay` does.
#pragma once
#include <string>
#include <vector>

#include "harness/extrapolate/extrapolation.hpp"
#include "harness/extrapolate/tests/synthetic_program.hpp"
#include "harness/replay/replay_report.hpp"

namespace oomlab::extrapolate::testing {

inline Extrapolation extrapolate_batches(const std::vector<std::int64_t>& batches, const TrainingShape& shape = {},
                                         FitMode mode = FitMode::automatic,
                                         const std::vector<TrainingShape>& shapes = {}) {
  KnobPoints knob{"batch", batches};
  std::vector<ProgramTrace> traces;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const TrainingShape& own = shapes.empty() ? shape : shapes[i];
    traces.push_back(program_trace("b" + std::to_string(batches[i]) + ".pickle", batches[i],
                                   training_program(batches[i], own).snapshot(), -1));
  }
  return extrapolation(knob, std::move(traces), mode);
}

struct Peaks {
  std::uint64_t allocated = 0, reserved = 0;
};

// The program actually run at `batch`: its snapshot replayed with no cap.
inline Peaks truth(std::int64_t batch, const TrainingShape& shape = {}) {
  replay::ReplayRequest request;
  request.budget = "unlimited";
  const replay::ReplayReport report = replay::analyse_snapshot(training_program(batch, shape).snapshot(), request);
  return {report.fidelity.peak_allocated, report.fidelity.peak_reserved};
}

}  // namespace oomlab::extrapolate::testing
