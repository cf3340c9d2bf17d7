// A generated snapshot as _dump_snapshot writes it: a training loop's trace of `entries`
// entries (weights once, then steps of activations freed in reverse, varied sizes so blocks
// are split and reused), its segment decisions made by oomlab's own allocator with PyTorch's
// addresses, pickled with protocol 4 and the memo sharing torch's pickle has (every key and
// action name one str object, each stack one frames list).
//
// With `live_blocks`, the run first allocates that many long-lived small blocks (a cache, a
// KV store) with a 512-byte free hole after every second one, still live when the snapshot is
// taken: the shape that made a replay quadratic when statistics walked every free block.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace oomlab::replay::bench {

// With `torch_density`, pickled as Python pickles a real torch 2.x trace: every entry dict
// memoized, each allocation's own frames list (12 frames) referenced by its frees: 70 bytes an
// entry against 49, the low end of real snapshots (70 to 230 in the committed torch fixtures).
std::vector<std::uint8_t> synthetic_snapshot(std::size_t entries, std::size_t live_blocks = 0,
                                             bool torch_density = false);

}  // namespace oomlab::replay::bench
