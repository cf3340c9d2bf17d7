// Times the steps of `oomlab extrapolate --bisect` on recordings of a generated training program
// with about 100k requests (alloc, free_requested, free) per recording: alignment and fits, one
// prediction, and the bisection. Prints one line per step.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "harness/extrapolate/prediction.hpp"
#include "harness/extrapolate/tests/synthetic_program.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace oomlab::extrapolate;
  // A step is 5 allocs (activations, naive attention scores, a cuBLAS-style workspace) and their
  // frees, 15 requests: 6667 steps are 100k requests. With a second argument, batch 1's
  // recording takes one more workspace every that many steps (GPT-2 at batch 1 makes 100 more):
  // the alignment then has that many differences to find.
  const int steps = argc > 1 ? std::atoi(argv[1]) : 6667;
  const int extra_every = argc > 2 ? std::atoi(argv[2]) : 0;
  testing::TrainingShape shape;
  shape.steps = steps;
  shape.quadratic = true;
  shape.workspaces = 1;
  std::vector<ProgramTrace> traces;
  for (std::int64_t batch : {1, 2, 4}) {
    testing::TrainingShape own = shape;
    own.extra_workspace_every = batch == 1 ? extra_every : 0;
    traces.push_back(
        program_trace("b" + std::to_string(batch), batch, testing::training_program(batch, own).snapshot(), -1));
  }
  const std::size_t requests = traces.back().requests.size();
  Clock::time_point start = Clock::now();
  const Extrapolation model = extrapolation({"batch", {1, 2, 4}}, std::move(traces), FitMode::automatic);
  std::printf("requests per recording: %zu\nalign + fit (3 recordings, %zu extra requests at batch 1): %.3f s\n",
              requests, model.extra_requests[1] + model.extra_requests[2] + model.extra_requests[0],
              seconds_since(start));
  PredictionSettings settings;
  settings.budget = "80GiB";
  start = Clock::now();
  const Prediction prediction = predict(model, 64, settings);
  std::printf("predict at 64: %.3f s (peak reserved %llu)\n", seconds_since(start),
              static_cast<unsigned long long>(prediction.result.peak_reserved));
  start = Clock::now();
  const BisectAnswer answer = bisect(model, settings);
  std::printf("bisect in 80GiB: largest batch %lld, %zu replays, %.3f s\n",
              static_cast<long long>(answer.largest.value_or(0)), answer.replays, seconds_since(start));
  return 0;
}
