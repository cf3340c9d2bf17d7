// A snapshot file to a Snapshot: read (gunzipped when it is a .gz; committed fixtures may be),
// decoded with the safe pickle subset, parsed. Every failure is one SnapshotError line that
// starts with the file's name: "'run.pickle': byte 57: opcode REDUCE (0x52) calls ...".
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/replay/pickle_decoder.hpp"
#include "harness/replay/snapshot.hpp"

namespace oomlab::replay {

struct SnapshotReadLimits {
  std::uint64_t max_file_bytes = std::uint64_t{4} << 30;    // as stored (maybe compressed)
  std::uint64_t max_pickle_bytes = std::uint64_t{4} << 30;  // after gunzip
  PickleLimits pickle;
};

// Whether this build can read gzip-compressed snapshots (it links zlib).
bool snapshot_gzip_supported();

Snapshot load_snapshot(const std::string& path, const SnapshotReadLimits& limits = {});

// The same for bytes already in memory; `name` stands for the file in messages.
Snapshot read_snapshot(const std::uint8_t* data, std::size_t size, const std::string& name,
                       const SnapshotReadLimits& limits = {});

}  // namespace oomlab::replay
