#include "harness/replay/address_ranges.hpp"

#include <algorithm>
#include <iterator>

namespace oomlab::replay {

void AddressRanges::add(std::uint64_t begin, std::uint64_t end) {
  if (begin >= end) return;
  auto it = ranges_.upper_bound(begin);
  if (it != ranges_.begin() && std::prev(it)->second >= begin) --it;  // touches from the left
  while (it != ranges_.end() && it->first <= end) {
    begin = std::min(begin, it->first);
    end = std::max(end, it->second);
    bytes_ -= it->second - it->first;
    it = ranges_.erase(it);
  }
  ranges_.emplace(begin, end);
  bytes_ += end - begin;
}

std::uint64_t AddressRanges::remove(std::uint64_t begin, std::uint64_t end) {
  if (begin >= end) return 0;
  std::uint64_t removed = 0;
  auto it = ranges_.upper_bound(begin);
  if (it != ranges_.begin() && std::prev(it)->second > begin) --it;
  while (it != ranges_.end() && it->first < end) {
    const std::uint64_t first = it->first, last = it->second;
    it = ranges_.erase(it);
    bytes_ -= last - first;
    removed += std::min(last, end) - std::max(first, begin);
    if (first < begin) {  // keep the part to the left
      ranges_.emplace(first, begin);
      bytes_ += begin - first;
    }
    if (last > end) {  // and to the right
      it = ranges_.emplace(end, last).first;
      bytes_ += last - end;
      break;
    }
  }
  return removed;
}

bool AddressRanges::contains(std::uint64_t address) const {
  auto it = ranges_.upper_bound(address);
  if (it == ranges_.begin()) return false;
  return address < std::prev(it)->second;
}

}  // namespace oomlab::replay
