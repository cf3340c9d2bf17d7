#include "harness/replay/stack_table.hpp"

namespace oomlab::replay {

StackTable::StackTable() {
  stacks_.emplace_back();  // kNoFrames
  stack_ids_.emplace(std::vector<FrameId>{}, kNoFrames);
}

std::size_t StackTable::StackHash::operator()(const std::vector<FrameId>& frames) const {
  std::size_t hash = frames.size();
  for (FrameId id : frames) hash = hash * 1000003u ^ id;
  return hash;
}

FrameId StackTable::add_frame(const Frame& frame) {
  std::string key;
  key.reserve(frame.filename.size() + frame.name.size() + 24);
  key.append(frame.filename).push_back('\0');
  key.append(std::to_string(frame.line)).push_back('\0');
  key.append(frame.name);
  const auto [it, inserted] =
      frame_ids_.emplace(std::move(key), static_cast<FrameId>(frames_.size()));
  if (inserted) frames_.push_back(frame);
  return it->second;
}

StackId StackTable::add_stack(const std::vector<FrameId>& frames) {
  const auto [it, inserted] = stack_ids_.emplace(frames, static_cast<StackId>(stacks_.size()));
  if (inserted) stacks_.push_back(frames);
  return it->second;
}

}  // namespace oomlab::replay
