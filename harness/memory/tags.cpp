// Attribution tags and the thread-local current tag.
#include "harness/memory/tags.hpp"

namespace oomlab::memory {
namespace {
thread_local Tag t_current_tag = Tag::other;
constexpr const char* kTagNames[kTagCount] = {"weights",   "grads", "optimizer", "activations",
                                              "workspace", "data",  "retained",  "other"};
}  // namespace

const char* tag_name(Tag tag) {
  auto index = static_cast<int>(tag);
  return index >= 0 && index < kTagCount ? kTagNames[index] : "unknown";
}

std::optional<Tag> tag_from_name(std::string_view name) {
  for (Tag tag : all_tags()) {
    if (name == tag_name(tag)) return tag;
  }
  return std::nullopt;
}

Tag current_tag() { return t_current_tag; }

TagScope::TagScope(Tag tag) : previous_(t_current_tag) { t_current_tag = tag; }
TagScope::~TagScope() { t_current_tag = previous_; }

}  // namespace oomlab::memory
