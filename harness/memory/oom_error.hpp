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
  std::string site;               // where it was made (site.hpp): "forward › block 9"; "" unknown
  Tag largest_tag = Tag::other;   // tag holding the most bytes at the time
  std::array<std::size_t, kTagCount> tag_allocated{};
  // The run's peaks without a cap (from a plan of the same run with no budget; 0: unknown).
  // With them the diagnosis looks at the whole run, not only the failing request.
  std::size_t need_allocated = 0;
  std::size_t need_reserved = 0;
  // Settings already on, so the remedy never suggests them.
  bool max_split_size_set = false;
  bool expandable_segments = false;
  Diagnosis diagnosis = Diagnosis::capacity;
  std::string remedy;             // the decision tree's next step for this diagnosis
};

// Decides the diagnosis and remedy for the numbers in `info` (fills both fields). A `leak`
// diagnosis already set (by the leak detector) is kept.
//  - capacity: the run's live bytes at its peak (need_allocated; without it, allocated plus the
//    request) exceed what the budget leaves beside memory used outside the allocator;
//  - external: they fit the budget, but not beside that outside memory;
//  - fragmentation: they fit, yet the request failed: the cache holds the bytes in pieces or
//    segments of the wrong shape (largest free block < request <= reserved - allocated, or
//    segment rounding at the edge of the budget).
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
