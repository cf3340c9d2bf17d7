// libFuzzer target: any byte string must decode into a document or throw PickleError, and a
// document must read as a snapshot and its replay events or throw SnapshotError (read whole, and
// read as a stream with the trace's entries handed over as they are decoded): never crash,
// hang, read out of bounds or allocate past the limits below. Every error must be one short
// line (the decoder quotes file content capped), and name a byte inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "harness/replay/pickle_decoder.hpp"
#include "harness/replay/snapshot_events.hpp"
#include "harness/replay/snapshot_parse.hpp"

using namespace oomlab::replay;

namespace {

void check_message(const char* message) {
  if (std::strlen(message) > 600 || std::strchr(message, '\n') != nullptr) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Small enough that one input stays far below libFuzzer's 2 GB RSS limit.
  PickleLimits limits;
  limits.max_decoded_bytes = std::size_t{64} << 20;
  limits.max_memo_entries = std::size_t{1} << 20;
  limits.max_string_bytes = std::size_t{1} << 20;
  try {
    const PickleDocument document = decode_pickle(data, size, limits);
    try {
      const Snapshot snapshot = parse_snapshot(document);
      snapshot_events(snapshot);
    } catch (const SnapshotError& error) {
      check_message(error.what());
    }
  } catch (const PickleError& error) {
    check_message(error.what());
    if (error.offset() > size) std::abort();
  }
  // The streamed read (trace entries handed over and their nodes recycled as they are decoded).
  try {
    PickleInput input(data, size);
    snapshot_events(decode_snapshot(input, limits));
  } catch (const PickleError& error) {
    check_message(error.what());
    if (error.offset() > size) std::abort();
  } catch (const SnapshotError& error) {
    check_message(error.what());
  }
  return 0;
}
