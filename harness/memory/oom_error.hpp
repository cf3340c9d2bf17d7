// The OOM exception: reads like PyTorch's message and adds a diagnosis and a remedy.
#pragma once
#include <array>
#include <cstddef>
#include <new>
#include <string>

#include "harness/memory/tags.hpp"

namespace oomlab::memory {

enum class Diagnosis {
  capacity,       // allocated + request exceeds the budget: the model does not fit
  fragmentation,  // largest free block < request <= reserved - allocated
  external,       // memory outside the allocator (contexts, other processes) makes it not fit
  leak,           // steady growth across steps (set by the leak detector, not the allocator)
};
const char* diagnosis_name(Diagnosis d);

struct OomInfo {
  std::size_t requested = 0;      // bytes asked for (rounded)
  std::size_t budget = 0;
  std::size_t allocated = 0;
  std::size_t reserved = 0;
  std::size_t largest_free_block = 0;
  std::size_t external = 0;
  Tag tag = Tag::other;           // tag of the failing request
  Tag largest_tag = Tag::other;   // tag holding the most bytes at the time
  std::array<std::size_t, kTagCount> tag_allocated{};
  Diagnosis diagnosis = Diagnosis::capacity;
  std::string remedy;             // the decision tree's next step for this diagnosis
};

// Decides the diagnosis and remedy for the numbers in `info` (fills both fields).
void diagnose(OomInfo& info);

class OomError : public std::bad_alloc {
 public:
  explicit OomError(OomInfo info);
  const char* what() const noexcept override { return message_.c_str(); }
  const OomInfo& info() const noexcept { return info_; }

 private:
  OomInfo info_;
  std::string message_;
};

}  // namespace oomlab::memory
