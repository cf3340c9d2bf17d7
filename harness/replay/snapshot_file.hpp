// A snapshot file to a Snapshot: read as a stream (gunzipped as it is read when it is a .gz;
// committed fixtures may be), decoded with the safe pickle subset, parsed, trace entries turned
// into TraceEntry as they are decoded. Every failure is one SnapshotError line that starts with
// the file's name: "'run.pickle': byte 57: opcode REDUCE (0x52) calls ...".
//
// A hostile file costs little: its first bytes (gzip's magic, or PROTO and a protocol 2 to 5;
// for a gzip, the first bytes it inflates to) are checked before the rest is read or inflated;
// neither the file nor the inflated pickle is ever held whole (a 1 MiB window of it is), and
// what the decoded values hold has one memory limit, whatever the file's size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/replay/pickle_decoder.hpp"
#include "harness/replay/snapshot.hpp"

namespace oomlab::replay {

struct SnapshotReadLimits {
  // The one limit: what the decoded snapshot holds while it is read (it becomes the decoder's
  // max_decoded_bytes). A trace entry is held as a 48-byte TraceEntry, a memo slot or two and
  // its frames list's node, so a 2 GB snapshot holds 2 to 3 GB at most.
  std::uint64_t max_memory_bytes = std::uint64_t{8} << 30;
  PickleLimits pickle;  // its other limits (depth, strings, memo) apply as they are; not max_decoded_bytes
};

// Whether this build can read gzip-compressed snapshots (it links zlib).
bool snapshot_gzip_supported();

Snapshot load_snapshot(const std::string& path, const SnapshotReadLimits& limits = {});

// The same for bytes already in memory; `name` stands for the file in messages.
Snapshot read_snapshot(const std::uint8_t* data, std::size_t size, const std::string& name,
                       const SnapshotReadLimits& limits = {});

}  // namespace oomlab::replay
