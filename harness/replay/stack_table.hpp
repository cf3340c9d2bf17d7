// Python call stacks of a snapshot, each stored once. torch symbolizes every traceback once and
// shares the frame dicts (torch/csrc/profiler/python/combined_traceback.cpp, py_symbolize), and a
// training loop allocates from the same few hundred places every step: interning by content
// keeps a million-event trace's stacks in a few kilobytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace oomlab::replay {

// One frame as torch records it: {"filename": str, "line": int, "name": str}.
struct Frame {
  std::string filename;
  std::int64_t line = 0;
  std::string name;  // the function
};

using FrameId = std::uint32_t;
using StackId = std::uint32_t;
constexpr StackId kNoFrames = 0;  // recorded without context, or a C++-only allocation

class StackTable {
 public:
  StackTable();

  FrameId add_frame(const Frame& frame);
  // Frames innermost first, as torch lists them (frames[0] is where the allocation happened).
  StackId add_stack(const std::vector<FrameId>& frames);

  const Frame& frame(FrameId id) const { return frames_.at(id); }
  const std::vector<FrameId>& stack(StackId id) const { return stacks_.at(id); }
  std::size_t frame_count() const { return frames_.size(); }
  std::size_t stack_count() const { return stacks_.size(); }  // including kNoFrames

 private:
  struct StackHash {
    std::size_t operator()(const std::vector<FrameId>& frames) const;
  };
  std::vector<Frame> frames_;
  std::vector<std::vector<FrameId>> stacks_;
  std::unordered_map<std::string, FrameId> frame_ids_;  // key: filename \0 line \0 name
  std::unordered_map<std::vector<FrameId>, StackId, StackHash> stack_ids_;
};

}  // namespace oomlab::replay
