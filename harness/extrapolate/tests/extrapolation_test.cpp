#include "harness/extrapolate/extrapolation.hpp"

#include <stdexcept>

#include <gtest/gtest.h>

#include "harness/extrapolate/prediction.hpp"
#include "harness/extrapolate/tests/recordings.hpp"

namespace oomlab::extrapolate {
namespace {

using testing::extrapolate_batches;
using testing::TrainingShape;
using testing::training_program;

// Sizes of the synthesised trace's allocs, in order.
std::vector<std::uint64_t> alloc_sizes(const replay::DeviceEvents& events) {
  std::vector<std::uint64_t> sizes;
  for (const replay::ReplayEvent& e : events.events) {
    if (e.kind == replay::ReplayEventKind::alloc) sizes.push_back(e.size);
  }
  return sizes;
}

// Sizes the program itself asks for at `batch`, in order.
std::vector<std::uint64_t> program_alloc_sizes(std::int64_t batch, const TrainingShape& shape = {}) {
  const testing::SyntheticProgram program = training_program(batch, shape);
  std::vector<std::uint64_t> sizes;
  for (const replay::TraceEntry& e : program.snapshot().device_traces[0]) {
    if (e.action == replay::TraceAction::alloc) sizes.push_back(e.size);
  }
  return sizes;
}

TEST(Extrapolation, AffineSizesAreExactAtAnyBatch) {
  const Extrapolation model = extrapolate_batches({1, 2});
  EXPECT_TRUE(model.exact());
  EXPECT_EQ(model.reference, 1u) << "the largest batch is the reference";
  EXPECT_EQ(model.allocs, 7u);
  EXPECT_EQ(model.fitted, 7u);
  EXPECT_EQ(model.checked, 0u) << "two points determine a line: nothing checked it";
  // The trace at 8 is the program's own at 8, request for request (sizes as asked, unrounded).
  EXPECT_EQ(alloc_sizes(synthesise(model, 8)), program_alloc_sizes(8));
  EXPECT_EQ(alloc_sizes(synthesise(model, 8))[1], 4u * 1000u * 8u + 12u) << "an odd size: not rounded to 512";
}

TEST(Extrapolation, ThirdRecordingChecksEveryLine) {
  const Extrapolation model = extrapolate_batches({4, 1, 2});
  EXPECT_EQ(model.reference, 0u);
  EXPECT_EQ(model.checked, model.fitted);
  EXPECT_TRUE(model.exact());
}

TEST(Extrapolation, QuadraticSizesFromThreeRecordings) {
  TrainingShape shape;
  shape.quadratic = true;
  const Extrapolation model = extrapolate_batches({1, 2, 4}, shape);
  EXPECT_TRUE(model.exact());
  EXPECT_EQ(model.fitted_quadratic, 2u) << "the attention scores of both steps";
  EXPECT_EQ(alloc_sizes(synthesise(model, 16)), program_alloc_sizes(16, shape));
}

TEST(Extrapolation, SizesNoLineFitsAreListedWithTheirSite) {
  TrainingShape shape;
  shape.quadratic = true;
  const Extrapolation model = extrapolate_batches({1, 2, 4}, shape, FitMode::affine);
  EXPECT_FALSE(model.exact());
  ASSERT_EQ(model.unfitted.size(), 2u);
  EXPECT_EQ(model.unfitted[0].site, "model.py:30 attention");
  EXPECT_NE(model.unfitted[0].what.find("batch=1,2,4"), std::string::npos) << model.unfitted[0].what;
  // Estimated on the line through batch 2 and 4, never below what batch 4 asked for.
  const std::vector<std::uint64_t> sizes = alloc_sizes(synthesise(model, 8));
  EXPECT_EQ(sizes[3], 4096u + 2u * 700'000u * 16u + 2u * 700'000u * (16u - 4u) / 2u * 4u);
}

TEST(Extrapolation, ChangedLineStopsNamingTheRequestAndBothLines) {
  TrainingShape moved;
  moved.moved_line = 22;
  try {
    extrapolate_batches({1, 2}, {}, FitMode::automatic, {TrainingShape{}, moved});
    FAIL() << "a program that allocates on another line was extrapolated";
  } catch (const MisalignedRequest& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("request 2 of b2.pickle"), std::string::npos) << what;
    EXPECT_NE(what.find("model.py:22 forward"), std::string::npos) << what;
    EXPECT_NE(what.find("b1.pickle (batch=1; there at that place: alloc 5.72MiB at model.py:21 forward)"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
}

TEST(Extrapolation, FramelessWorkspacesAreTheirOwnClass) {
  // cuBLAS at batch 4 takes a second 4 MiB workspace per step that batch 1 and 2 do not.
  TrainingShape one, two;
  one.workspaces = 1;
  two.workspaces = 2;
  const Extrapolation model = extrapolate_batches({1, 2, 4}, {}, FitMode::automatic, {one, one, two});
  EXPECT_FALSE(model.exact());
  EXPECT_EQ(model.workspaces, 2u);
  EXPECT_TRUE(model.unfitted.empty()) << "workspaces are bounded, not listed";
  EXPECT_EQ(model.left_out_live_bytes[2], 4u * 1024 * 1024);
  EXPECT_EQ(model.unaligned_bound(4), 4u * 1024 * 1024);
  EXPECT_EQ(model.unaligned_bound(8), 8u * 1024 * 1024) << "scaled with the batch: assumed no faster";
}

TEST(Extrapolation, ExtraWorkspacesInASmallerRecordingAreCounted) {
  TrainingShape one, two;
  one.workspaces = 1;
  two.workspaces = 2;
  const Extrapolation model = extrapolate_batches({1, 2}, {}, FitMode::automatic, {two, one});
  EXPECT_EQ(model.extra_requests[0], 2u);
  EXPECT_EQ(model.workspaces, 0u);
  EXPECT_FALSE(model.exact());
  EXPECT_EQ(model.unaligned_bound(2), 8u * 1024 * 1024) << "4 MiB at batch 1, scaled to 2";
}

TEST(Extrapolation, WorkspaceWhoseSizeFitsNothingIsLeftOutAndListed) {
  TrainingShape small, large;
  small.workspaces = large.workspaces = 1;
  large.workspace_bytes = 6 * 1024 * 1024;  // cuDNN picks another algorithm at batch 4
  const Extrapolation model = extrapolate_batches({1, 2, 4}, {}, FitMode::automatic, {small, small, large});
  EXPECT_EQ(model.workspaces, 2u);
  ASSERT_EQ(model.unfitted.size(), 2u);
  EXPECT_TRUE(model.unfitted[0].left_out);
  EXPECT_NE(model.unfitted[0].what.find("a workspace: left out, bounded"), std::string::npos) << model.unfitted[0].what;
  EXPECT_FALSE(model.estimated()) << "bounded, not estimated";
  EXPECT_FALSE(model.exact());
  // Each recording's own workspaces, scaled to the target: batch 1's 4 MiB may be 16 MiB at 4
  // under the assumption (no faster than the batch), more than batch 4's 6 MiB.
  EXPECT_EQ(model.left_out_live_bytes[2], 6u * 1024 * 1024);
  EXPECT_EQ(model.unaligned_bound(4), 16u * 1024 * 1024);
}

TEST(Extrapolation, LibraryWorkspaceUnderTheProgramsLineIsAWorkspace) {
  // cuDNN takes a workspace inside conv2d at batch 1 and 4 only: the stack has the user's line,
  // but the request is the library's, and it is returned at once.
  TrainingShape with, without;
  with.conv_workspace_bytes = 2 * 1024 * 1024;
  const Extrapolation model = extrapolate_batches({1, 2, 4}, {}, FitMode::automatic, {with, without, with});
  EXPECT_EQ(model.workspaces, 2u) << "batch 4's, not in batch 2";
  EXPECT_TRUE(model.unfitted.empty());
  EXPECT_FALSE(model.exact());
  const Extrapolation other_way = extrapolate_batches({1, 2}, {}, FitMode::automatic, {with, without});
  EXPECT_EQ(other_way.extra_requests[0], 2u) << "batch 1's extra workspaces are counted, not refused";
}

TEST(Extrapolation, ProgramsOwnExtraRequestInASmallerRecordingStops) {
  TrainingShape debug;
  debug.debug_alloc = true;
  try {
    extrapolate_batches({1, 2}, {}, FitMode::automatic, {debug, TrainingShape{}});
    FAIL() << "an extra request on the program's own line was taken for a workspace";
  } catch (const MisalignedRequest& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("of b1.pickle"), std::string::npos) << what;
    EXPECT_NE(what.find("train.py:50 step"), std::string::npos) << what;
    EXPECT_NE(what.find("no counterpart in b2.pickle (batch=2"), std::string::npos) << what;
  }
}

TEST(Extrapolation, RecordingsOfDifferentDevicesAreRefused) {
  testing::SyntheticProgram other = training_program(2);
  testing::SyntheticProgram on_device_1;
  on_device_1.set_device(1);
  on_device_1.free(on_device_1.alloc(1024));
  std::vector<ProgramTrace> traces;
  traces.push_back(program_trace("a.pickle", 1, training_program(1).snapshot(), -1));
  traces.push_back(program_trace("b.pickle", 2, on_device_1.snapshot(), -1));
  try {
    extrapolation({"batch", {1, 2}}, std::move(traces), FitMode::automatic);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("a.pickle traces device 0 and b.pickle device 1"), std::string::npos)
        << e.what();
  }
}

TEST(Extrapolation, RecordingThatRanOutOfMemoryIsRefused) {
  testing::SyntheticProgram program = training_program(1);
  replay::Snapshot snapshot = program.snapshot();
  replay::TraceEntry oom;
  oom.action = replay::TraceAction::oom;
  oom.size = 1 << 30;
  snapshot.device_traces[0].push_back(oom);
  EXPECT_THROW(program_trace("a.pickle", 1, snapshot, -1), std::invalid_argument);
}

TEST(Extrapolation, SizeBelowOneByteAtTheTargetIsRefused) {
  // A request that shrinks with the batch: zero bytes at a batch beyond the recorded.
  std::vector<ProgramTrace> traces;
  for (std::int64_t b : {1, 2}) {
    testing::SyntheticProgram program;
    program.free(program.alloc(static_cast<std::uint64_t>(3000 - 1000 * b), "train.py", 5));
    traces.push_back(program_trace("s" + std::to_string(b), b, program.snapshot(), -1));
  }
  const Extrapolation model = extrapolation({"batch", {1, 2}}, std::move(traces), FitMode::automatic);
  EXPECT_NO_THROW(synthesise(model, 2));
  EXPECT_THROW(synthesise(model, 3), std::invalid_argument);
}

// Sizes the program asks for at `batch`, less its workspaces under conv2d's frames (model.py:26
// blocks returned at once): what the synthesised trace must hold.
std::vector<std::uint64_t> sizes_without_conv_workspace(std::int64_t batch, const TrainingShape& shape) {
  const testing::SyntheticProgram program = training_program(batch, shape);
  const std::vector<replay::TraceEntry>& trace = program.snapshot().device_traces[0];
  std::vector<std::uint64_t> sizes;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (trace[i].action != replay::TraceAction::alloc) continue;
    const bool returned_next = i + 1 < trace.size() && trace[i + 1].action == replay::TraceAction::free_requested &&
                               trace[i + 1].addr == trace[i].addr;
    if (!(returned_next && trace[i].size == shape.conv_output_workspace_bytes)) sizes.push_back(trace[i].size);
  }
  return sizes;
}

TEST(Extrapolation, WorkspaceUnderTheOutputsOwnFramesIsToldApartByItsLifetime) {
  // cuDNN's workspace is asked for inside conv2d under the very frames of the conv's output; at
  // batch 4 the algorithm takes one, at batch 1 and 2 none. Paired by stack alone, batch 4's
  // workspace may stand for batch 1's output; its lifetime (returned before the op ends) tells.
  for (const bool before : {false, true}) {
    TrainingShape without, with;
    without.conv_output = with.conv_output = true;
    with.conv_output_workspace_bytes = 3 * 1024 * 1024;
    without.workspace_before_output = with.workspace_before_output = before;
    const Extrapolation model = extrapolate_batches({1, 2, 4}, {}, FitMode::automatic, {without, without, with});
    EXPECT_EQ(model.workspaces, 2u) << "batch 4's, one per step; before=" << before;
    EXPECT_TRUE(model.unfitted.empty()) << model.unfitted.front().what;
    EXPECT_EQ(model.fitted, model.allocs - 2);
    EXPECT_EQ(alloc_sizes(synthesise(model, 8)), sizes_without_conv_workspace(8, without)) << "before=" << before;
    EXPECT_EQ(model.unaligned_bound(8), 6u * 1024 * 1024) << "3 MiB at batch 4, scaled to 8";
    // And the other way: the smaller recordings take the workspace, the reference does not.
    const Extrapolation other_way = extrapolate_batches({1, 2}, {}, FitMode::automatic, {with, without});
    EXPECT_EQ(other_way.extra_requests[0], 2u) << "before=" << before;
    EXPECT_EQ(alloc_sizes(synthesise(other_way, 8)), sizes_without_conv_workspace(8, without));
  }
}

TEST(Extrapolation, AWorkspaceWhoseSizesMeetAQuadraticOnlyByChanceIsLeftOut) {
  // cuDNN's workspace at every batch, 2, 2 and 5 MiB at batch 1, 2, 4: a line fails, and the
  // quadratic through the three points (3 - 1.5 b + 0.5 b^2 MiB) is checked by nothing: 23 MiB at
  // batch 8 from a coincidence. ResNet-50 on the H200 over-predicted its batch-16 peak by 43% so.
  std::vector<TrainingShape> shapes(3);
  const std::uint64_t mib = 1024 * 1024;
  const std::uint64_t sizes[] = {2 * mib, 2 * mib, 5 * mib};
  for (int i = 0; i < 3; ++i) {
    shapes[i].conv_output = true;
    shapes[i].conv_output_workspace_bytes = sizes[i];
  }
  const Extrapolation model = extrapolate_batches({1, 2, 4}, {}, FitMode::automatic, shapes);
  EXPECT_EQ(model.fitted_quadratic, 0u);
  EXPECT_EQ(model.workspaces, 2u) << "one a step, left out and bounded";
  EXPECT_EQ(model.fitted, model.allocs - 2);
  TrainingShape without;
  without.conv_output = true;
  EXPECT_EQ(alloc_sizes(synthesise(model, 8)), sizes_without_conv_workspace(8, without));
  // A user's own tensor keeps its quadratic (naive attention scores): it lives past its op.
  TrainingShape scores;
  scores.quadratic = true;
  EXPECT_GT(extrapolate_batches({1, 2, 4}, scores).fitted_quadratic, 0u);
}

TEST(Extrapolation, OutputsAndWorkspacesOfOneOpAlignWhenEveryBatchTakesThem) {
  TrainingShape shape;
  shape.conv_output = true;
  shape.conv_output_workspace_bytes = 3 * 1024 * 1024;
  const Extrapolation model = extrapolate_batches({1, 2, 4}, shape);
  EXPECT_TRUE(model.exact()) << "the same requests at every batch, every size a line";
  EXPECT_EQ(alloc_sizes(synthesise(model, 16)), program_alloc_sizes(16, shape));
}

TEST(Extrapolation, FreesThatComeInAnotherOrderAtEachBatchStillAlign) {
  // autocast's cast cache is emptied in hash-table order: the same frees, permuted per run.
  TrainingShape shape;
  shape.cast_cache = 5;
  const Extrapolation model = extrapolate_batches({1, 2, 4}, shape);
  EXPECT_TRUE(model.exact());
  EXPECT_EQ(model.fitted, model.allocs);
  const testing::Peaks truth = testing::truth(8, shape);
  const Prediction prediction = predict(model, 8, PredictionSettings{});
  EXPECT_EQ(prediction.need_allocated, truth.allocated);
  EXPECT_EQ(prediction.need_reserved, truth.reserved);
}

TEST(Extrapolation, FreesInAnotherOrderAlignAcrossAWorkspaceOneBatchTakesAmongThem) {
  TrainingShape plain, split;
  plain.cast_cache = split.cast_cache = 5;
  split.workspace_among_cast_frees = true;
  const Extrapolation model = extrapolate_batches({1, 2, 4}, {}, FitMode::automatic, {split, plain, plain});
  EXPECT_EQ(model.fitted, model.allocs) << "every alloc of the reference aligned and fitted";
  EXPECT_EQ(model.extra_requests[0], 2u) << "batch 1's workspace in each step";
  EXPECT_EQ(alloc_sizes(synthesise(model, 8)), program_alloc_sizes(8, plain));
}

}  // namespace
}  // namespace oomlab::extrapolate
