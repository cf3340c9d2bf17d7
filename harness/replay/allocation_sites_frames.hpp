// Which recorded frame is the user's own line. PyTorch 2.x records C++ frames by default
// (stacks="all"): a stack is the unwinder, the caching allocator, the dispatcher, the op, CPython's
// interpreter, then the Python frames, innermost first. PyTorch's memory viewer drops the
// unwinder, dispatch and interpreter frames before it shows a stack (torch/cuda/_memory_viz.py);
// oomlab goes further and names the first frame in the program's own code as the site, and says
// what a stack without one is (generated code, a library, the backward pass) instead of printing
// a C++ frame.
#pragma once
#include <string>
#include <vector>

#include "harness/replay/stack_table.hpp"

namespace oomlab::replay {

enum class FrameKind {
  user,       // the program's own Python: a .py file, `python -c` (<string>), a notebook cell
  library,    // installed packages, torch, the standard library, <frozen ...>
  generated,  // code torch wrote: Inductor's output (torchinductor_*/xx/cxx....py), torch.fx (<eval_with_key>)
  native,     // C++ (libtorch, CPython's interpreter, libc): line 0, a .cpp/.h/.so or "??"
};

FrameKind frame_kind(const Frame& frame);

// "train.py:42 forward"; a C++ frame as its function alone ("at::native::mm_out"), the
// file in brackets when it is known ("at::native::mm_out (Blas.cpp)").
std::string frame_line(const Frame& frame);

// The frames a user reads, innermost first, at most `limit`: the Python ones when there are any,
// else the C++ ones without the unwinder, allocator, dispatcher and interpreter (what
// _memory_viz.py drops).
std::vector<std::string> stack_lines(const StackTable& stacks, StackId stack, std::size_t limit);

// The site: the innermost user frame; without one, what the stack is, in brackets:
// "(Inductor-generated code: cdt....py:234 partition_0)", "(library code: transformers/...)",
// "(backward pass: MmBackward0, no Python frame)", "(C++ only: at::cuda::getCurrentCUDABlasHandle)".
std::string site_of(const StackTable& stacks, StackId stack);

}  // namespace oomlab::replay
