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

std::vector<std::uint8_t> synthetic_snapshot(std::size_t entries, std::size_t live_blocks = 0);

}  // namespace oomlab::replay::bench
