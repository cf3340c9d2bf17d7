// A prediction as the usual run record (harness/runner/run_record.hpp), so `compare` and `report`
// read it beside replays of real snapshots: built by replay_record (one writer), then named
// scenario "extrapolate", variant the reference file, knobs {knob: target}, with what makes it a
// prediction as metrics (exact, bound_bytes, unfitted and workspace requests).
#pragma once
#include "harness/extrapolate/extrapolation.hpp"
#include "harness/extrapolate/prediction.hpp"
#include "harness/runner/run_record.hpp"

namespace oomlab::extrapolate {

RunRecord extrapolation_record(const Extrapolation& model, const Prediction& prediction);

}  // namespace oomlab::extrapolate
