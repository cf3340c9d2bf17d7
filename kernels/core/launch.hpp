// Grid sizing shared by every launcher (host-only; no CUDA headers, so CPU code may use it).
#pragma once
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace oomlab {

// Blocks needed to cover `count` items with `per_block` items each; throws if the grid would
// not fit the unsigned grid dimension (a shape bug, not something to launch).
inline unsigned ceil_div(std::size_t count, std::size_t per_block) {
  std::size_t blocks = (count + per_block - 1) / per_block;
  if (blocks > std::numeric_limits<unsigned>::max()) {
    throw std::invalid_argument("ceil_div: grid of " + std::to_string(blocks) + " blocks is too large");
  }
  return static_cast<unsigned>(blocks);
}

}  // namespace oomlab
