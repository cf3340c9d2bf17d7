#include "harness/replay/allocation_sites_frames.hpp"

#include <string_view>

namespace oomlab::replay {
namespace {

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }
bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }
bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Inductor writes its kernels to <cache>/<2 chars>/c<the same 2 chars><hash>.py; the cache is
// /tmp/torchinductor_<user> unless TORCHINDUCTOR_CACHE_DIR moves it, so the shape decides too.
bool inductor_output(std::string_view path) {
  if (contains(path, "/torchinductor_")) return true;
  const std::string_view file = base_name(path);
  const std::string_view folder = base_name(path.substr(0, path.size() - file.size() - (file.size() < path.size())));
  return file.size() >= 40 && file[0] == 'c' && folder.size() == 2 && file.substr(1, 2) == folder;
}

// torch's own files in a source checkout (an installed torch is under site-packages already):
// /torch/ followed by one of its packages, so a user's folder named torch/ stays the user's.
bool torch_source(std::string_view path) {
  const std::size_t at = path.rfind("/torch/");
  if (at == std::string_view::npos) return false;
  const std::string_view rest = path.substr(at + 7);
  for (std::string_view package : {"nn/", "optim/", "autograd/", "cuda/", "utils/", "amp/", "fx/", "distributed/",
                                   "functional.py", "serialization.py", "random.py"}) {
    if (starts_with(rest, package)) return true;
  }
  return starts_with(rest, "_");  // _tensor.py, _dynamo/, _inductor/, _functorch/, _ops.py, ...
}

bool library_python(std::string_view path) {
  return contains(path, "site-packages/") || contains(path, "dist-packages/") || contains(path, "/lib/python") ||
         contains(path, "/lib64/python") || contains(path, "/lib/pypy") || torch_source(path);
}

// The frames every C++ stack shares and no user acts on: the unwinder, the caching allocator,
// the dispatcher's boxing and registration wrappers, CPython's interpreter, libc's entry.
bool plumbing(const Frame& frame) {
  const std::string_view name = frame.name, file = frame.filename;
  for (std::string_view part : {"unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "CachingAllocator",
                                "wrap_kernel_functor", "::redispatch", "at::_ops::", "at::detail::empty",
                                "__libc_", "core/boxing", "Redispatch"}) {
    if (contains(name, part) || contains(file, part)) return true;
  }
  return name == "_start" || starts_with(name, "Py") || starts_with(name, "_Py") ||
         starts_with(base_name(file), "Register") || ends_with(file, ".c");
}

// "at::native::mm_out(at::Tensor const&, ...)" -> "at::native::mm_out": the parameter list is
// the first "(" that does not open "(anonymous namespace)".
std::string function_name(const std::string& name) {
  std::size_t from = 0;
  while (true) {
    const std::size_t open = name.find('(', from);
    if (open == std::string::npos) return name;
    if (name.compare(open, 21, "(anonymous namespace)") != 0) return name.substr(0, open);
    from = open + 21;
  }
}

// Python frame lines as torch records them; a line <= 0 is one torch could not tell.
std::string python_line(std::string_view file, const Frame& frame) {
  std::string line(file);
  if (frame.line > 0) line += ":" + std::to_string(frame.line);
  return line + " " + frame.name;
}

// "/opt/venv/lib/python3.12/site-packages/transformers/x.py" -> "transformers/x.py".
std::string_view package_path(std::string_view path) {
  for (std::string_view marker : {"site-packages/", "dist-packages/"}) {
    const std::size_t at = path.rfind(marker);
    if (at != std::string_view::npos) return path.substr(at + marker.size());
  }
  return path;
}

// A C++-only stack: the backward pass (the autograd engine's thread runs no Python), else the
// innermost frame that is not plumbing.
std::string native_site(const StackTable& stacks, const std::vector<FrameId>& frames) {
  bool autograd_engine = false;
  for (FrameId id : frames) {
    const std::string name = function_name(stacks.frame(id).name);
    const std::string_view node_prefix = "torch::autograd::generated::";
    if (starts_with(name, node_prefix) && ends_with(name, "::apply")) {
      return "(backward pass: " + name.substr(node_prefix.size(), name.size() - node_prefix.size() - 7) +
             ", no Python frame)";
    }
    autograd_engine = autograd_engine || contains(name, "torch::autograd::Engine::");
  }
  if (autograd_engine) return "(backward pass, no Python frame)";
  for (FrameId id : frames) {
    if (!plumbing(stacks.frame(id))) return "(C++ only: " + function_name(stacks.frame(id).name) + ")";
  }
  return "(C++ only, no Python frame)";
}

// A frame that is not a .py file yet has a line and no C/C++ file or library: Python all the
// same (a .pyx, an odd name). torch's C++ frames have line 0 unless symbolized with debug info.
bool python_like(const Frame& frame) {
  const std::string_view file = frame.filename;
  if (frame.line <= 0 || file.empty() || file == "??" || contains(file, ".so")) return false;
  for (std::string_view extension : {".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".cu", ".cuh"}) {
    if (ends_with(file, extension)) return false;
  }
  return true;
}

}  // namespace

FrameKind frame_kind(const Frame& frame) {
  const std::string_view file = frame.filename;
  if (starts_with(file, "<")) {
    if (file == "<string>" || file == "<stdin>" || starts_with(file, "<ipython-input-")) return FrameKind::user;
    return starts_with(file, "<eval_with_key>") ? FrameKind::generated : FrameKind::library;
  }
  if (!ends_with(file, ".py") && !python_like(frame)) return FrameKind::native;
  if (inductor_output(file)) return FrameKind::generated;
  return library_python(file) ? FrameKind::library : FrameKind::user;
}

std::string frame_line(const Frame& frame) {
  if (frame_kind(frame) != FrameKind::native) return python_line(frame.filename, frame);
  const std::string_view file = base_name(frame.filename);
  const bool known = !file.empty() && file != "??";
  return function_name(frame.name) + (known ? " (" + std::string(file) + ")" : "");
}

std::vector<std::string> stack_lines(const StackTable& stacks, StackId stack, std::size_t limit) {
  const std::vector<FrameId>& frames = stacks.stack(stack);
  bool any_python = false;
  for (FrameId id : frames) any_python = any_python || frame_kind(stacks.frame(id)) != FrameKind::native;
  std::vector<std::string> lines;
  for (FrameId id : frames) {
    if (lines.size() == limit) break;
    const Frame& frame = stacks.frame(id);
    const bool shown = any_python ? frame_kind(frame) != FrameKind::native : !plumbing(frame);
    if (shown) lines.push_back(frame_line(frame));
  }
  return lines;
}

std::string site_of(const StackTable& stacks, StackId stack) {
  const std::vector<FrameId>& frames = stacks.stack(stack);
  if (frames.empty()) return "(no frames recorded: C++ only, e.g. the backward pass)";
  const Frame* generated = nullptr;
  const Frame* library = nullptr;
  for (FrameId id : frames) {
    const Frame& frame = stacks.frame(id);
    const FrameKind kind = frame_kind(frame);
    if (kind == FrameKind::user) return frame_line(frame);
    if (kind == FrameKind::generated && generated == nullptr) generated = &frame;
    if (kind == FrameKind::library && library == nullptr) library = &frame;
  }
  if (generated != nullptr) {
    const bool fx = starts_with(generated->filename, "<eval_with_key>");
    return std::string(fx ? "(torch.fx-generated code: " : "(Inductor-generated code: ") +
           python_line(base_name(generated->filename), *generated) + ")";
  }
  if (library != nullptr) return "(library code: " + python_line(package_path(library->filename), *library) + ")";
  return native_site(stacks, frames);
}

}  // namespace oomlab::replay
