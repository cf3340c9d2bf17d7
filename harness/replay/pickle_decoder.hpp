// A safe decoder for the pickles torch.cuda.memory._dump_snapshot() writes.
//
// _dump_snapshot is `pickle.dump(_snapshot(), f)` (torch/cuda/memory.py): Python's default
// protocol (4 up to Python 3.13, 5 from 3.14) over a dict of lists, dicts, str, int, float, bool,
// None and a tuple (segment_pool_id). torch's C++ twin (_memory_snapshot_pickled,
// torch/csrc/cuda/memory_snapshot.cpp) writes the same layout in protocol 2.
//
// So exactly that subset is decoded: protocols 2 to 5, the binary opcodes for those types, the
// memo and FRAME. Everything that imports, calls or constructs (GLOBAL, STACK_GLOBAL, REDUCE,
// BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, PERSID, BINPERSID, EXT1/2/4) is refused by name, as are
// protocol 0's text opcodes and data no snapshot holds (sets, bytearray, out-of-band buffers).
//
// A hostile file gets one PickleError line naming the problem and its byte offset, never a crash:
// lengths are checked against the bytes left before anything is allocated; nesting, the memo and
// the total memory the decoded data may use are capped (PickleLimits); memo slots must be written
// in order, as every pickler writes them (a 5-byte LONG_BINPUT cannot reserve gigabytes); a
// reference cycle (a list inside itself), a dict key given twice and a non-str/int key are
// refused, none of which Python's pickler can produce from a snapshot.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "harness/replay/pickle_input.hpp"
#include "harness/replay/pickle_value.hpp"

namespace oomlab::replay {

class PickleError : public std::runtime_error {
 public:
  // what(): "byte <offset>: <problem>".
  PickleError(std::uint64_t offset, const std::string& problem);
  std::uint64_t offset() const { return offset_; }

 private:
  std::uint64_t offset_;
};

struct PickleLimits {
  // Containers inside containers. A snapshot nests 7 deep (root dict, segments, segment,
  // blocks, block, frames, frame).
  std::size_t max_depth = 64;
  // One str or bytes. A snapshot's longest strings are file paths and FX source excerpts.
  std::size_t max_string_bytes = std::size_t{16} << 20;
  // Memo slots. Python memoizes every str, dict and list: about three per trace event, so a
  // 2 GB snapshot of 20M entries uses some 60M.
  std::size_t max_memo_entries = std::size_t{1} << 28;
  // Memory the decoded values may hold at once (nodes, items, strings, memo, stack, and what a
  // PickleTraceSink keeps of the entries handed to it), approximately. The input is not counted:
  // it is read as a stream.
  std::size_t max_decoded_bytes = std::size_t{4} << 30;
};

// The pickle protocol named by the first two bytes (PROTO and 2 to 5), checked before anything
// else is read: throws PickleError at byte 0 for anything else (text protocols, gzip, zeros).
int pickle_protocol_of(const std::uint8_t* data, std::size_t size);

// Takes each device's trace entries as the decoder completes them, so that a big snapshot's
// trace is turned into events while it is read and never held as a tree of values
// (snapshot_parse.cpp). The decoder hands over the dicts on the stack above a list that sits
// where snapshot["device_traces"][device] is being written (the root dict below, the key
// "device_traces", the list of devices, earlier devices' lists), then forgets them: the trace
// list stays empty, and what reads the document checks that the lists it was handed are the
// ones the root holds there.
class PickleTraceSink {
 public:
  virtual ~PickleTraceSink() = default;
  // `count` values, oldest first, appended to `trace` (device `device`). Returns the bytes the
  // sink now holds for them, charged against max_decoded_bytes.
  virtual std::size_t take_entries(const PickleValue& trace, std::size_t device,
                                   const PickleValue* entries, std::size_t count) = 0;
  // Whether the sink has read a list an entry held (a frames list) for good, knowing it again by
  // its identity: the decoder then empties it, and a later memo reference reaches it empty.
  virtual bool read_for_good(const PickleValue& list) const = 0;
};

// Decodes one whole pickle: `size` bytes at `data`, ending with STOP and nothing after it.
// Throws PickleError.
PickleDocument decode_pickle(const std::uint8_t* data, std::size_t size,
                             const PickleLimits& limits = {});
// The same from a stream, trace entries handed to `sink` when there is one. What counts against
// max_decoded_bytes is what is held: an entry handed over is charged as the sink says.
PickleDocument decode_pickle(PickleInput& input, const PickleLimits& limits,
                             PickleTraceSink* sink);

}  // namespace oomlab::replay
