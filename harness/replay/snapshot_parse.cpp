#include "harness/replay/snapshot_parse.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/memory/user_text.hpp"

namespace oomlab::replay {
namespace {

constexpr std::size_t kNoIndex = static_cast<std::size_t>(-1);
// Distinct action names this reader does not know; torch has added one or two per release.
constexpr std::size_t kMaxOtherActions = 64;
// Devices a snapshot has traces for: torch writes one per visible GPU.
constexpr std::size_t kMaxDevices = 4096;
// Trace entries handed over while decoding are kept in chunks of up to this many, which never
// move: a vector doubling its way to 40M entries holds up to three times their size as it grows.
// 48 MiB: above glibc's largest mmap threshold (32 MiB), so a chunk freed as it is joined into
// the trace goes back to the system at once instead of staying in the heap beside the trace.
constexpr std::size_t kEntriesPerChunk = std::size_t{1} << 20;

// Where a value sits, rendered only for a message: "segments[3].blocks[2]", "device_traces[0][7]".
struct Where {
  const char* head;
  std::size_t index = kNoIndex;
  const char* inner = "";
  std::size_t inner_index = kNoIndex;

  std::string text() const {
    std::string out = head;
    if (index != kNoIndex) out += "[" + std::to_string(index) + "]";
    if (*inner != '\0') out += std::string(".") + inner;
    if (inner_index != kNoIndex) out += "[" + std::to_string(inner_index) + "]";
    return out;
  }
};

// "an int", "a str", "None": Python's type names with their article.
std::string a_kind(PickleKind kind) {
  if (kind == PickleKind::none) return "None";
  return std::string(kind == PickleKind::integer ? "an " : "a ") + pickle_kind_name(kind);
}

[[noreturn]] void fail(const Where& where, const PickleValue& at, const std::string& problem) {
  std::string message = where.text() + ": " + problem;
  if (at.offset() != 0) {
    message += std::string(" (") + pickle_kind_name(at.kind()) + " at byte " +
               std::to_string(at.offset()) + ")";
  }
  throw SnapshotError(message);
}

// One key of one dict: reads its value as the type the snapshot gives it, or says what is wrong.
struct Field {
  const Where& where;
  const PickleValue& dict;
  std::string_view key;

  [[noreturn]] void fail_here(const std::string& problem) const {
    fail(where, dict, quote_user_text(key) + " " + problem);
  }
  [[noreturn]] void wrong(const PickleValue& value, const char* expected) const {
    fail_here("is " + a_kind(value.kind()) + (value.is_negative() ? " below zero" : "") +
              ", expected " + expected);
  }
  std::uint64_t u64(const PickleValue& value) const {
    const auto result = value.to_uint64();
    if (!result) wrong(value, "a non-negative int");
    return *result;
  }
  std::int64_t i64(const PickleValue& value) const {
    const auto result = value.to_int64();
    if (!result) wrong(value, "a 64-bit int");
    return *result;
  }
  bool boolean(const PickleValue& value) const {
    if (!value.is(PickleKind::boolean)) wrong(value, "a bool");
    return value.as_bool();
  }
  double number(const PickleValue& value) const {
    if (value.is(PickleKind::floating)) return value.as_double();
    if (const auto integer = value.to_int64()) return static_cast<double>(*integer);
    wrong(value, "a float");
  }
  std::string_view str(const PickleValue& value) const {
    if (!value.is(PickleKind::string)) wrong(value, "a str");
    return value.text();
  }
};

// Calls read(field, value) for each entry of `dict` with a str key, in one pass: unknown keys
// (newer torch) and int keys are passed over by the caller's if-chain.
template <typename Read>
void for_each_field(const Where& where, const PickleValue& dict, Read read) {
  for (std::size_t k = 0; k < dict.size(); ++k) {
    const PickleValue key = dict.key(k);
    if (key.is(PickleKind::string)) read(Field{where, dict, key.text()}, dict.value(k));
  }
}

// A frame's line: PyTorch writes 2^64-1 for frames it has no line for (generated code, fake
// tensors). Any 64-bit value is accepted; one past int64 is no line a file has: 0, shown as unknown.
std::int64_t frame_line(const Field& field, const PickleValue& value) {
  if (const auto line = value.to_int64()) return *line;
  if (value.to_uint64()) return 0;
  field.wrong(value, "a 64-bit int");
}

void require_dict(const Where& where, const PickleValue& value, const char* what) {
  if (!value.is(PickleKind::dict)) {
    fail(where, value, "is " + a_kind(value.kind()) + ", expected " + what + " dict");
  }
}

void require_list(const Where& where, const PickleValue& value, const char* what) {
  if (!value.is(PickleKind::list)) {
    fail(where, value, "is " + a_kind(value.kind()) + ", expected " + what);
  }
}

// torch builds every segment, block and trace entry as its own dict; one held twice is a
// hand-made file repeating it through the memo (a cheap way to make a huge trace).
void require_held_once(const Where& where, const PickleValue& value, const char* what) {
  if (value.holders() > 1) {
    fail(where, value,
         std::string("this ") + what + " appears " + std::to_string(value.holders()) +
             " times through memo references; torch writes each " + what + " once");
  }
}

void require_key(const Where& where, const PickleValue& dict, bool present, const char* key,
                 const char* what) {
  if (!present) fail(where, dict, std::string("the ") + what + " has no '" + key + "'");
}

// {"1": d0, "2": d1, "4": d2, ... "32768": d15}: the interval's start in MiB, as text, to its
// divisions (Module.cpp builds the keys from a doubling counter).
std::vector<RoundupDivisions> parse_divisions(const Field& field, const PickleValue& dict) {
  if (!dict.is(PickleKind::dict)) field.wrong(dict, "a dict");
  std::vector<RoundupDivisions> result;
  for (std::size_t i = 0; i < dict.size(); ++i) {
    const PickleValue key = dict.key(i);
    const std::string_view text = key.text();
    RoundupDivisions entry;
    const auto [end, error] =
        std::from_chars(text.data(), text.data() + text.size(), entry.from_mib);
    if (!key.is(PickleKind::string) || error != std::errc() || end != text.data() + text.size()) {
      field.fail_here("has a key that is not a size in MiB");
    }
    entry.divisions = field.u64(dict.value(i));
    result.push_back(entry);
  }
  std::sort(result.begin(), result.end(), [](const RoundupDivisions& a, const RoundupDivisions& b) {
    return a.from_mib < b.from_mib;
  });
  return result;
}

struct ActionName {
  const char* name;
  TraceAction action;
};
constexpr ActionName kActions[] = {
    {"alloc", TraceAction::alloc},
    {"free_requested", TraceAction::free_requested},
    {"free_completed", TraceAction::free_completed},
    {"segment_alloc", TraceAction::segment_alloc},
    {"segment_free", TraceAction::segment_free},
    {"segment_map", TraceAction::segment_map},
    {"segment_unmap", TraceAction::segment_unmap},
    {"snapshot", TraceAction::snapshot},
    {"oom", TraceAction::oom},
};

class SnapshotParser final : public PickleTraceSink {
 public:
  explicit SnapshotParser(Snapshot& snapshot) : snapshot_(snapshot) {}

  void parse_root(const PickleValue& root);
  std::size_t take_entries(const PickleValue& trace, std::size_t device,
                           const PickleValue* entries, std::size_t count) override;
  bool read_for_good(const PickleValue& list) const override {
    return stack_of_list_.count(list.identity()) != 0;  // a frames list, known by identity from now on
  }

 private:
  void parse_segment(const PickleValue& dict, const Where& where);
  void parse_block(const PickleValue& dict, const Where& where, Segment& segment,
                   std::uint64_t& next_address);
  void parse_entry(const PickleValue& dict, const Where& where, std::vector<TraceEntry>& trace);
  void parse_settings(const PickleValue& dict);
  StackId parse_frames(const Field& field, const PickleValue& frames);
  FrameId parse_frame(const Where& where, const PickleValue& dict);
  PoolId parse_pool(const Field& field, const PickleValue& value);
  std::uint32_t other_action(const Field& field, std::string_view name);

  Snapshot& snapshot_;
  // The same frames list or frame dict reached again (torch shares them) is read once.
  std::unordered_map<const void*, StackId> stack_of_list_;
  std::unordered_map<const void*, FrameId> frame_of_dict_;
  // The entries handed over while decoding, by device, and the list they were appended to.
  struct StreamedTrace {
    const void* list = nullptr;
    std::vector<std::vector<TraceEntry>> chunks;
    std::size_t count = 0;
  };
  std::unordered_map<std::size_t, StreamedTrace> streamed_trace_;
};

std::size_t SnapshotParser::take_entries(const PickleValue& trace, std::size_t device,
                                         const PickleValue* entries, std::size_t count) {
  const Where where{"device_traces", device};
  if (device >= kMaxDevices) {
    fail(where, trace, "is one of more than " + std::to_string(kMaxDevices) + " device traces");
  }
  StreamedTrace& streamed = streamed_trace_[device];
  if (streamed.list == nullptr) streamed.list = trace.identity();
  if (streamed.list != trace.identity()) fail(where, trace, "two lists are written as this device's trace");
  std::size_t held = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (streamed.chunks.empty() || streamed.chunks.back().size() == streamed.chunks.back().capacity()) {
      // Small first (a small trace costs little), as large as the trace so far up to the cap.
      const std::size_t size = std::min(kEntriesPerChunk, std::max<std::size_t>(256, streamed.count));
      streamed.chunks.emplace_back().reserve(size);
      held += size * sizeof(TraceEntry);
    }
    parse_entry(entries[i], Where{"device_traces", device, "", streamed.count}, streamed.chunks.back());
    ++streamed.count;
  }
  return held;
}

void SnapshotParser::parse_root(const PickleValue& root) {
  if (root.is(PickleKind::list)) {
    throw SnapshotError(
        "the pickle holds a list, not a snapshot dict: a bare list of segments is what "
        "torch.cuda.memory_snapshot() returns, without the trace; save the run with "
        "torch.cuda.memory._dump_snapshot()");
  }
  if (!root.is(PickleKind::dict)) {
    throw SnapshotError("the pickle holds " + a_kind(root.kind()) +
                        ", not the dict torch.cuda.memory._dump_snapshot() writes");
  }
  const Where where{"snapshot"};
  const PickleValue* segments = root.find("segments");
  if (segments == nullptr) {
    fail(where, root, "the dict has no 'segments': not a torch memory snapshot");
  }
  require_list({"segments"}, *segments, "a list of segments");
  snapshot_.segments.reserve(segments->size());
  for (std::size_t i = 0; i < segments->size(); ++i) {
    parse_segment(segments->item(i), Where{"segments", i});
  }

  if (const PickleValue* traces = root.find("device_traces")) {
    require_list({"device_traces"}, *traces, "a list with one trace per device");
    for (const auto& [device, streamed] : streamed_trace_) {
      if (device >= traces->size()) {
        throw SnapshotError("device_traces: entries were written for device " + std::to_string(device) +
                            " but the list holds " + std::to_string(traces->size()) + " traces");
      }
    }
    snapshot_.device_traces.resize(traces->size());
    for (std::size_t device = 0; device < traces->size(); ++device) {
      const PickleValue trace = traces->item(device);
      const Where trace_where{"device_traces", device};
      require_list(trace_where, trace, "a list of trace entries");
      require_held_once(trace_where, trace, "trace list");
      std::vector<TraceEntry>& entries = snapshot_.device_traces[device];
      const auto streamed = streamed_trace_.find(device);
      if (streamed != streamed_trace_.end()) {
        if (streamed->second.list != trace.identity()) {
          fail(trace_where, trace, "is not the list whose entries were written as this device's trace");
        }
        // One exact allocation; each chunk freed once copied, so the two are never held whole.
        entries.reserve(streamed->second.count + trace.size());
        for (std::vector<TraceEntry>& chunk : streamed->second.chunks) {
          entries.insert(entries.end(), chunk.begin(), chunk.end());
          std::vector<TraceEntry>().swap(chunk);
        }
      } else {
        entries.reserve(trace.size());
      }
      for (std::size_t i = 0; i < trace.size(); ++i) {
        parse_entry(trace.item(i), Where{"device_traces", device, "", entries.size()}, entries);
      }
    }
  } else if (!streamed_trace_.empty()) {
    throw SnapshotError("device_traces: trace entries were written but the snapshot has no 'device_traces'");
  }
  if (const PickleValue* settings = root.find("allocator_settings")) {
    parse_settings(*settings);
  }
}

void SnapshotParser::parse_segment(const PickleValue& dict, const Where& where) {
  require_dict(where, dict, "a segment");
  require_held_once(where, dict, "segment");
  Segment segment;
  bool has_address = false, has_total = false, has_stream = false, has_type = false;
  std::optional<std::uint64_t> allocated, active;
  for_each_field(where, dict, [&](const Field& field, const PickleValue& value) {
    const std::string_view key = field.key;
    if (key == "device") {
      const std::int64_t device = field.i64(value);
      if (device < 0 || device > 0xFFFF) field.fail_here("is not a device index");
      segment.device = static_cast<int>(device);
    } else if (key == "address") {
      segment.address = field.u64(value);
      has_address = true;
    } else if (key == "total_size") {
      segment.total_size = field.u64(value);
      has_total = true;
    } else if (key == "allocated_size") {
      allocated = field.u64(value);
    } else if (key == "active_size") {
      active = field.u64(value);
    } else if (key == "requested_size") {
      segment.requested_size = field.u64(value);
    } else if (key == "stream") {
      segment.stream = field.i64(value);
      has_stream = true;
    } else if (key == "segment_type") {
      const std::string_view type = field.str(value);
      if (type == "large") {
        segment.type = SegmentType::large;
      } else if (type == "small") {
        segment.type = SegmentType::small;
      } else {
        field.fail_here("is " + quote_user_text(type) + ", expected 'large' or 'small'");
      }
      has_type = true;
    } else if (key == "segment_pool_id") {
      segment.pool = parse_pool(field, value);
    } else if (key == "is_expandable") {
      segment.is_expandable = field.boolean(value);
    } else if (key == "frames") {
      segment.frames = parse_frames(field, value);
    }
  });
  const PickleValue* blocks = dict.find("blocks");
  require_key(where, dict, has_address, "address", "segment");
  require_key(where, dict, has_total, "total_size", "segment");
  require_key(where, dict, has_stream, "stream", "segment");
  require_key(where, dict, has_type, "segment_type", "segment");
  require_key(where, dict, blocks != nullptr, "blocks", "segment");
  const Where blocks_where{where.head, where.index, "blocks"};
  require_list(blocks_where, *blocks, "a list of blocks");
  require_held_once(blocks_where, *blocks, "block list");

  segment.blocks.reserve(blocks->size());
  std::uint64_t next_address = segment.address;
  std::uint64_t allocated_sum = 0, active_sum = 0;
  for (std::size_t i = 0; i < blocks->size(); ++i) {
    parse_block(blocks->item(i), Where{where.head, where.index, "blocks", i}, segment,
                next_address);
    const Block& block = segment.blocks.back();
    if (block.state == BlockState::active_allocated) allocated_sum += block.size;
    if (block.state != BlockState::inactive) active_sum += block.size;
  }
  // Absent in hand-written snapshots only; torch's own meaning, from the blocks.
  segment.allocated_size = allocated.value_or(allocated_sum);
  segment.active_size = active.value_or(active_sum);
  snapshot_.segments.push_back(std::move(segment));
}

void SnapshotParser::parse_block(const PickleValue& dict, const Where& where, Segment& segment,
                                 std::uint64_t& next_address) {
  require_dict(where, dict, "a block");
  require_held_once(where, dict, "block");
  Block block;
  bool has_size = false, has_state = false;
  std::optional<std::uint64_t> address, requested;
  for_each_field(where, dict, [&](const Field& field, const PickleValue& value) {
    const std::string_view key = field.key;
    if (key == "size") {
      block.size = field.u64(value);
      has_size = true;
    } else if (key == "requested_size") {
      requested = field.u64(value);
    } else if (key == "address") {
      address = field.u64(value);
    } else if (key == "state") {
      const std::string_view state = field.str(value);
      if (state == "active_allocated") {
        block.state = BlockState::active_allocated;
      } else if (state == "active_pending_free" || state == "active_awaiting_free") {
        // Module.cpp writes "active_pending_free"; _snapshot's docstring says "awaiting".
        block.state = BlockState::active_pending_free;
      } else if (state == "inactive") {
        block.state = BlockState::inactive;
      } else {
        field.fail_here("is " + quote_user_text(state) +
                        ", expected 'active_allocated', 'active_pending_free' or 'inactive'");
      }
      has_state = true;
    } else if (key == "frames") {
      block.frames = parse_frames(field, value);
    }
  });
  require_key(where, dict, has_size, "size", "block");
  require_key(where, dict, has_state, "state", "block");
  // torch computes each block's address as the segment's plus the sizes before it.
  block.address = address.value_or(next_address);
  block.requested_size = requested.value_or(block.size);
  next_address = block.address + block.size;
  segment.blocks.push_back(block);
}

void SnapshotParser::parse_entry(const PickleValue& dict, const Where& where,
                                 std::vector<TraceEntry>& trace) {
  require_dict(where, dict, "a trace entry");
  require_held_once(where, dict, "trace entry");
  TraceEntry entry;
  const PickleValue* action = dict.find("action");
  require_key(where, dict, action != nullptr, "action", "trace entry");
  const std::string_view name = Field{where, dict, "action"}.str(*action);
  entry.action = TraceAction::other;
  for (const ActionName& known : kActions) {
    if (name == known.name) entry.action = known.action;
  }
  if (entry.action == TraceAction::other) {
    entry.other_action = static_cast<std::uint16_t>(other_action(Field{where, dict, "action"}, name));
  }
  bool has_addr = false, has_size = false, has_stream = false, has_device_free = false;
  for_each_field(where, dict, [&](const Field& field, const PickleValue& value) {
    const std::string_view key = field.key;
    if (key == "addr") {
      entry.addr = field.u64(value);
      has_addr = true;
    } else if (key == "size") {
      entry.size = field.u64(value);
      has_size = true;
    } else if (key == "stream") {
      entry.stream = field.i64(value);
      has_stream = true;
    } else if (key == "time_us") {
      entry.time_us = field.i64(value);
    } else if (key == "device_free") {
      entry.device_free = field.u64(value);
      has_device_free = true;
    } else if (key == "frames") {
      entry.frames = parse_frames(field, value);
    }
  });
  // Module.cpp writes addr for every action but oom, which has device_free in its place.
  const char* what = trace_action_name(entry.action);
  const std::string described = std::string("'") + what + "' entry";
  if (entry.action == TraceAction::oom) {
    require_key(where, dict, has_device_free, "device_free", described.c_str());
  } else if (entry.action != TraceAction::other && entry.action != TraceAction::snapshot) {
    require_key(where, dict, has_addr, "addr", described.c_str());
  }
  if (entry.action != TraceAction::other) {
    require_key(where, dict, has_size, "size", described.c_str());
    if (entry.action != TraceAction::snapshot) {
      require_key(where, dict, has_stream, "stream", described.c_str());
    }
  }
  trace.push_back(entry);
}

void SnapshotParser::parse_settings(const PickleValue& dict) {
  const Where where{"allocator_settings"};
  require_dict(where, dict, "an allocator settings");
  AllocatorSettings settings;
  for_each_field(where, dict, [&](const Field& field, const PickleValue& value) {
    const std::string_view key = field.key;
    if (key == "PYTORCH_CUDA_ALLOC_CONF") {
      settings.alloc_conf = std::string(field.str(value));
    } else if (key == "max_split_size") {
      // torch writes int64_t(SIZE_MAX), -1, for "unlimited"; an unsigned writer, 2^64 - 1.
      if (!value.is(PickleKind::integer)) field.wrong(value, "an int");
      const auto bytes = value.to_int64();
      if (bytes && *bytes >= 0) settings.max_split_size = static_cast<std::uint64_t>(*bytes);
    } else if (key == "garbage_collection_threshold") {
      settings.garbage_collection_threshold = field.number(value);
    } else if (key == "expandable_segments") {
      settings.expandable_segments = field.boolean(value);
    } else if (key == "roundup_power2_divisions") {
      settings.roundup_power2_divisions = parse_divisions(field, value);
    }
  });
  snapshot_.allocator_settings = std::move(settings);
}

StackId SnapshotParser::parse_frames(const Field& field, const PickleValue& frames) {
  if (!frames.is(PickleKind::list) && !frames.is(PickleKind::tuple)) {
    field.wrong(frames, "a list of frames");
  }
  const auto cached = stack_of_list_.find(frames.identity());
  if (cached != stack_of_list_.end()) return cached->second;
  std::vector<FrameId> ids;
  ids.reserve(frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    ids.push_back(parse_frame(field.where, frames.item(i)));
  }
  const StackId id = snapshot_.stacks.add_stack(ids);
  stack_of_list_.emplace(frames.identity(), id);
  return id;
}

FrameId SnapshotParser::parse_frame(const Where& where, const PickleValue& dict) {
  if (!dict.is(PickleKind::dict)) {
    fail(where, dict, "has a frame that is " + a_kind(dict.kind()) + ", expected a frame dict");
  }
  const auto cached = frame_of_dict_.find(dict.identity());
  if (cached != frame_of_dict_.end()) return cached->second;
  Frame frame;
  bool has_filename = false, has_line = false, has_name = false;
  for_each_field(where, dict, [&](const Field& field, const PickleValue& value) {
    const std::string_view key = field.key;
    if (key == "filename") {
      frame.filename = std::string(field.str(value));
      has_filename = true;
    } else if (key == "line") {
      frame.line = frame_line(field, value);
      has_line = true;
    } else if (key == "name") {
      frame.name = std::string(field.str(value));
      has_name = true;
    }
  });
  require_key(where, dict, has_filename, "filename", "frame");
  require_key(where, dict, has_line, "line", "frame");
  require_key(where, dict, has_name, "name", "frame");
  const FrameId id = snapshot_.stacks.add_frame(frame);
  frame_of_dict_.emplace(dict.identity(), id);
  return id;
}

PoolId SnapshotParser::parse_pool(const Field& field, const PickleValue& value) {
  if ((!value.is(PickleKind::tuple) && !value.is(PickleKind::list)) || value.size() != 2) {
    field.wrong(value, "a pair of ints");
  }
  return PoolId{field.u64(value.item(0)), field.u64(value.item(1))};
}

std::uint32_t SnapshotParser::other_action(const Field& field, std::string_view name) {
  std::vector<std::string>& names = snapshot_.other_actions;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<std::uint32_t>(i);
  }
  if (names.size() == kMaxOtherActions) {
    field.fail_here("is " + quote_user_text(name) + ", one more of " +
                    std::to_string(kMaxOtherActions) +
                    " action names unknown here: not a torch trace");
  }
  names.emplace_back(name);
  return static_cast<std::uint32_t>(names.size() - 1);
}

}  // namespace

Snapshot decode_snapshot(PickleInput& input, const PickleLimits& limits) {
  Snapshot snapshot;
  SnapshotParser parser(snapshot);
  const PickleDocument document = decode_pickle(input, limits, &parser);
  snapshot.pickle_protocol = document.protocol();
  parser.parse_root(document.root());
  return snapshot;
}

Snapshot parse_snapshot(const PickleDocument& document) {
  Snapshot snapshot;
  snapshot.pickle_protocol = document.protocol();
  SnapshotParser(snapshot).parse_root(document.root());
  return snapshot;
}

}  // namespace oomlab::replay
