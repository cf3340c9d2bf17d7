// Attribution tags: every allocation belongs to one, set by an RAII scope around the code that
// allocates (the "what filled the card" column of every report).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace oomlab::memory {

enum class Tag : std::uint8_t { weights, grads, optimizer, activations, workspace, data, retained, other };
constexpr int kTagCount = 8;

const char* tag_name(Tag tag);
std::optional<Tag> tag_from_name(std::string_view name);
constexpr std::array<Tag, kTagCount> all_tags() {
  return {Tag::weights, Tag::grads,   Tag::optimizer, Tag::activations,
          Tag::workspace, Tag::data, Tag::retained, Tag::other};
}

// The tag new allocations on this thread receive (Tag::other outside any scope).
Tag current_tag();

// Sets the current tag for its lifetime and restores the previous one; scopes nest.
class TagScope {
 public:
  explicit TagScope(Tag tag);
  ~TagScope();
  TagScope(const TagScope&) = delete;
  TagScope& operator=(const TagScope&) = delete;

 private:
  Tag previous_;
};

}  // namespace oomlab::memory
