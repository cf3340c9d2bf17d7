// The longest common subsequence of two key sequences, found as Myers' shortest edit script
// ("An O(ND) Difference Algorithm and Its Variations", 1986) in linear space: the middle snake,
// then both halves, as diff-match-patch's bisect does. Time O((N + M) D) for D differences, so
// two recordings of one program that differ in a few hundred library requests align in
// milliseconds; memory O(N + M).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace oomlab::extrapolate {

constexpr std::size_t kUnmatched = static_cast<std::size_t>(-1);

// For each position of `a`, the position of `b` it is matched to (kUnmatched: deleted). The
// matches are increasing in both sequences and as many as any common subsequence has.
std::vector<std::size_t> match_sequences(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b);

}  // namespace oomlab::extrapolate
