// A set of disjoint address ranges [begin, end): the device memory a trace has seen the
// allocator reserve (segment_alloc, segment_map) and not yet give back.
#pragma once
#include <cstdint>
#include <map>

namespace oomlab::replay {

class AddressRanges {
 public:
  void add(std::uint64_t begin, std::uint64_t end);  // merges with touching ranges
  // Removes [begin, end) and returns how many of its bytes were in the set.
  std::uint64_t remove(std::uint64_t begin, std::uint64_t end);
  bool contains(std::uint64_t address) const;
  std::uint64_t bytes() const { return bytes_; }

 private:
  std::map<std::uint64_t, std::uint64_t> ranges_;  // begin -> end
  std::uint64_t bytes_ = 0;
};

}  // namespace oomlab::replay
