// The decoded pickle read as a Snapshot (snapshot.hpp).
//
// Required: the root dict with "segments"; in each segment "address", "total_size", "stream",
// "segment_type" and "blocks"; in each block "size" and "state"; in each trace entry "action"
// and what its action carries ("addr", "size", "stream"; "device_free" for oom). Everything else
// torch has added over the versions is optional with torch's meaning when absent
// ("requested_size" = size, block "address" = running offset in the segment, no frames).
// A snapshot without trace entries reads fine: whether it can be replayed is snapshot_events'
// question.
#pragma once
#include "harness/replay/pickle_decoder.hpp"
#include "harness/replay/pickle_value.hpp"
#include "harness/replay/snapshot.hpp"

namespace oomlab::replay {

// Throws SnapshotError: "segments[3].blocks[1]: 'size' is a str, expected an int (dict at
// byte 1234)".
Snapshot parse_snapshot(const PickleDocument& document);

// Decodes and parses in one pass: each device's trace entries become TraceEntry as the decoder
// completes them (PickleTraceSink), so a big trace is never held as pickle values. Throws
// PickleError or SnapshotError.
Snapshot decode_snapshot(PickleInput& input, const PickleLimits& limits);

}  // namespace oomlab::replay
