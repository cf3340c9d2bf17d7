// A program's snapshot written in code: each request a line of a script (alloc at file:line,
// free), recorded as PyTorch traces it (alloc; free_requested and free_completed together), as
// a Snapshot for the library tests or as pickle bytes for the CLI tests.
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "harness/replay/snapshot.hpp"
#include "harness/replay/tests/pickle_builder.hpp"

namespace oomlab::extrapolate::testing {

class SyntheticProgram {
 public:
  // A block asked for from `file`:`line` in `function` (file "" : no frame at all, as a C++-only
  // library workspace is recorded). Returns its handle for free().
  std::size_t alloc(std::uint64_t size, const std::string& file = "train.py", std::int64_t line = 1,
                    const std::string& function = "step") {
    replay::TraceEntry entry;
    entry.action = replay::TraceAction::alloc;
    entry.addr = next_address_;
    entry.size = size;
    next_address_ += (size + 511) / 512 * 512 + 512;
    if (!file.empty()) {
      const replay::FrameId frame = snapshot_.stacks.add_frame({file, line, function});
      entry.frames = snapshot_.stacks.add_stack({frame});
    }
    trace().push_back(entry);
    return trace().size() - 1;
  }

  // A block asked for inside a library called from the program's `file`:`line` (cuDNN's
  // workspace inside conv2d): the innermost frame torch's, the user's line below it.
  std::size_t alloc_in_library(std::uint64_t size, const std::string& file, std::int64_t line) {
    const std::size_t handle =
        alloc(size, "/usr/lib/python3/dist-packages/torch/nn/modules/conv.py", 456, "_conv_forward");
    const replay::FrameId library = snapshot_.stacks.stack(trace()[handle].frames).front();
    const replay::FrameId user = snapshot_.stacks.add_frame({file, line, "forward"});
    trace()[handle].frames = snapshot_.stacks.add_stack({library, user});
    return handle;
  }

  void free(std::size_t handle) {
    replay::TraceEntry entry = trace()[handle];
    entry.action = replay::TraceAction::free_requested;
    trace().push_back(entry);
    entry.action = replay::TraceAction::free_completed;
    trace().push_back(entry);
  }

  void set_device(int device) { device_ = device; }
  const replay::Snapshot& snapshot() const { return snapshot_; }

  // The snapshot as _dump_snapshot pickles it (no segments: the trace is the whole run).
  std::string pickle() const {
    using namespace replay::testing;
    std::vector<std::string> devices;
    for (const std::vector<replay::TraceEntry>& entries : snapshot_.device_traces) {
      std::vector<std::string> items;
      for (const replay::TraceEntry& entry : entries) {
        std::vector<std::string> frames;
        for (replay::FrameId id : snapshot_.stacks.stack(entry.frames)) {
          const replay::Frame& frame = snapshot_.stacks.frame(id);
          frames.push_back(py_dict({{"filename", py_str(frame.filename)}, {"line", py_int(frame.line)},
                                    {"name", py_str(frame.name)}}));
        }
        items.push_back(py_dict({{"action", py_str(replay::trace_action_name(entry.action))},
                                 {"addr", py_int(static_cast<std::int64_t>(entry.addr))},
                                 {"size", py_int(static_cast<std::int64_t>(entry.size))},
                                 {"stream", py_int(0)},
                                 {"frames", py_list(frames)}}));
      }
      devices.push_back(py_list(items));
    }
    return pickled(py_dict({{"segments", py_list({})}, {"device_traces", py_list(devices)}}));
  }

  void write(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    const std::string bytes = pickle();
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 private:
  std::vector<replay::TraceEntry>& trace() {
    if (snapshot_.device_traces.size() <= static_cast<std::size_t>(device_)) {
      snapshot_.device_traces.resize(static_cast<std::size_t>(device_) + 1);
    }
    return snapshot_.device_traces[static_cast<std::size_t>(device_)];
  }

  replay::Snapshot snapshot_;
  int device_ = 0;
  std::uint64_t next_address_ = std::uint64_t{0x7f0000000000};
};

// The program the tests extrapolate: weights, then `steps` training steps whose activations are
// affine in the batch (an odd element count, so the requested size is not the rounded one),
// optionally a naive attention score quadratic in it, and frameless cuBLAS-style workspaces
// (`workspaces` per step) taken and returned around one kernel.
struct TrainingShape {
  int steps = 2;
  bool quadratic = false;
  int workspaces = 0;
  std::int64_t moved_line = 0;  // != 0: the second activation is made on this line instead (a changed program)
  int extra_workspace_every = 0;  // > 0: one more workspace every that many steps (a library's choice)
  std::uint64_t workspace_bytes = 4 * 1024 * 1024;  // each workspace's size (a library picks per shape)
  bool debug_alloc = false;       // the program's own extra request (train.py:50) in each step
  std::uint64_t conv_workspace_bytes = 0;  // > 0: a cuDNN-style workspace in the forward (model.py:25)
  // conv2d's output (model.py:26, inside torch) and, when > 0, a workspace this big under the
  // very same frames, returned before the op ends (cuDNN's algorithm choice per shape).
  bool conv_output = false;
  std::uint64_t conv_output_workspace_bytes = 0;
  bool workspace_before_output = false;
  // > 0: autocast's copies of that many weights (model.py:60..), freed at the step's end in an
  // order that changes with the batch (the cast cache is emptied in hash order).
  int cast_cache = 0;
  bool workspace_among_cast_frees = false;  // a frameless workspace comes and goes amid those frees
};

inline SyntheticProgram training_program(std::int64_t batch, const TrainingShape& shape = {}) {
  SyntheticProgram program;
  const std::size_t weights = program.alloc(50'000'000, "model.py", 10, "__init__");
  (void)weights;  // live to the end, as parameters are
  for (int step = 0; step < shape.steps; ++step) {
    const std::size_t embed =
        program.alloc(4 * 1000 * static_cast<std::uint64_t>(batch) + 12, "model.py", 20, "forward");
    const std::size_t hidden = program.alloc(2 * 3'000'000 * static_cast<std::uint64_t>(batch), "model.py",
                                             shape.moved_line != 0 ? shape.moved_line : 21, "forward");
    for (int w = 0; w < shape.workspaces; ++w) program.free(program.alloc(shape.workspace_bytes, ""));
    if (shape.debug_alloc) program.free(program.alloc(1024, "train.py", 50, "step"));
    if (shape.conv_workspace_bytes > 0)
      program.free(program.alloc_in_library(shape.conv_workspace_bytes, "model.py", 25));
    std::size_t conv = 0;
    if (shape.conv_output) {
      const auto workspace = [&] {
        if (shape.conv_output_workspace_bytes > 0) {
          program.free(program.alloc_in_library(shape.conv_output_workspace_bytes, "model.py", 26));
        }
      };
      if (shape.workspace_before_output) workspace();
      conv = program.alloc_in_library(2 * 1000 * static_cast<std::uint64_t>(batch) + 6, "model.py", 26);
      if (!shape.workspace_before_output) workspace();
    }
    std::vector<std::size_t> casts;
    for (int c = 0; c < shape.cast_cache; ++c) {
      casts.push_back(program.alloc(64 * static_cast<std::uint64_t>(c + 1), "model.py", 60 + c, "forward"));
    }
    if (shape.extra_workspace_every > 0 && step % shape.extra_workspace_every == 0) {
      program.free(program.alloc(8 * 1024 * 1024, ""));
    }
    std::size_t scores = 0;
    if (shape.quadratic) {
      scores =
          program.alloc(2 * 700'000 * static_cast<std::uint64_t>(batch * batch) + 4096, "model.py", 30, "attention");
    }
    const std::size_t grad =
        program.alloc(2 * 3'000'000 * static_cast<std::uint64_t>(batch) + 1000, "train.py", 40, "backward");
    if (shape.quadratic) program.free(scores);
    program.free(grad);
    program.free(hidden);
    program.free(embed);
    if (shape.conv_output) program.free(conv);
    for (std::size_t c = 0; c < casts.size(); ++c) {  // another order at each batch
      program.free(casts[(c * 2 + static_cast<std::size_t>(batch)) % casts.size()]);
      if (shape.workspace_among_cast_frees && c == 1) program.free(program.alloc(1024 * 1024, ""));
    }
  }
  return program;
}

}  // namespace oomlab::extrapolate::testing
