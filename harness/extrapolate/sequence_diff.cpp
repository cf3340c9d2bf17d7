#include "harness/extrapolate/sequence_diff.hpp"

#include <utility>

namespace oomlab::extrapolate {
namespace {

class Differ {
 public:
  Differ(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b, std::vector<std::size_t>& out)
      : a_(a), b_(b), out_(out) {}

  // Matches a[a0, a1) with b[b0, b1).
  void diff(std::size_t a0, std::size_t a1, std::size_t b0, std::size_t b1) {
    while (a0 < a1 && b0 < b1 && a_[a0] == b_[b0]) out_[a0++] = b0++;
    while (a0 < a1 && b0 < b1 && a_[a1 - 1] == b_[b1 - 1]) out_[--a1] = --b1;
    if (a0 == a1 || b0 == b1) return;
    const auto [x, y] = middle_snake(a0, a1, b0, b1);
    if ((x == a0 && y == b0) || (x == a1 && y == b1)) return;  // no common key left (cannot split further)
    diff(a0, x, b0, y);
    diff(x, a1, y, b1);
  }

 private:
  // A point on the optimal path near its middle: forward and backward searches meet there.
  std::pair<std::size_t, std::size_t> middle_snake(std::size_t a0, std::size_t a1, std::size_t b0, std::size_t b1) {
    const auto n = static_cast<std::int64_t>(a1 - a0), m = static_cast<std::int64_t>(b1 - b0);
    const std::int64_t max_d = (n + m + 1) / 2, offset = max_d, length = 2 * max_d + 2;
    forward_.assign(static_cast<std::size_t>(length), -1);
    backward_.assign(static_cast<std::size_t>(length), -1);
    forward_[static_cast<std::size_t>(offset + 1)] = 0;
    backward_[static_cast<std::size_t>(offset + 1)] = 0;
    const std::int64_t delta = n - m;
    const bool front = (delta & 1) != 0;  // with an odd delta the forward search finds the overlap
    std::int64_t k1_start = 0, k1_end = 0, k2_start = 0, k2_end = 0;
    const auto at = [](std::vector<std::int64_t>& v, std::int64_t i) -> std::int64_t& {
      return v[static_cast<std::size_t>(i)];
    };
    for (std::int64_t d = 0; d < max_d; ++d) {
      for (std::int64_t k1 = -d + k1_start; k1 <= d - k1_end; k1 += 2) {
        const std::int64_t k1_offset = offset + k1;
        std::int64_t x1 = (k1 == -d || (k1 != d && at(forward_, k1_offset - 1) < at(forward_, k1_offset + 1)))
                              ? at(forward_, k1_offset + 1)
                              : at(forward_, k1_offset - 1) + 1;
        std::int64_t y1 = x1 - k1;
        while (x1 < n && y1 < m && a_[a0 + static_cast<std::size_t>(x1)] == b_[b0 + static_cast<std::size_t>(y1)]) {
          ++x1;
          ++y1;
        }
        at(forward_, k1_offset) = x1;
        if (x1 > n) {
          k1_end += 2;
        } else if (y1 > m) {
          k1_start += 2;
        } else if (front) {
          const std::int64_t k2_offset = offset + delta - k1;
          if (k2_offset >= 0 && k2_offset < length && at(backward_, k2_offset) != -1 &&
              x1 >= n - at(backward_, k2_offset)) {
            return {a0 + static_cast<std::size_t>(x1), b0 + static_cast<std::size_t>(y1)};
          }
        }
      }
      for (std::int64_t k2 = -d + k2_start; k2 <= d - k2_end; k2 += 2) {
        const std::int64_t k2_offset = offset + k2;
        std::int64_t x2 = (k2 == -d || (k2 != d && at(backward_, k2_offset - 1) < at(backward_, k2_offset + 1)))
                              ? at(backward_, k2_offset + 1)
                              : at(backward_, k2_offset - 1) + 1;
        std::int64_t y2 = x2 - k2;
        while (x2 < n && y2 < m &&
               a_[a1 - 1 - static_cast<std::size_t>(x2)] == b_[b1 - 1 - static_cast<std::size_t>(y2)]) {
          ++x2;
          ++y2;
        }
        at(backward_, k2_offset) = x2;
        if (x2 > n) {
          k2_end += 2;
        } else if (y2 > m) {
          k2_start += 2;
        } else if (!front) {
          const std::int64_t k1_offset = offset + delta - k2;
          if (k1_offset >= 0 && k1_offset < length && at(forward_, k1_offset) != -1) {
            const std::int64_t x1 = at(forward_, k1_offset), y1 = offset + x1 - k1_offset;
            if (x1 >= n - x2) return {a0 + static_cast<std::size_t>(x1), b0 + static_cast<std::size_t>(y1)};
          }
        }
      }
    }
    return {a0, b0};  // nothing in common
  }

  const std::vector<std::uint64_t>& a_;
  const std::vector<std::uint64_t>& b_;
  std::vector<std::size_t>& out_;
  std::vector<std::int64_t> forward_, backward_;
};

}  // namespace

std::vector<std::size_t> match_sequences(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
  std::vector<std::size_t> matched(a.size(), kUnmatched);
  Differ(a, b, matched).diff(0, a.size(), 0, b.size());
  return matched;
}

}  // namespace oomlab::extrapolate
