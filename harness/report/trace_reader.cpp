#include "harness/report/trace_reader.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "harness/report/input_error.hpp"
#include "harness/report/input_file.hpp"

namespace oomlab::report {

namespace {

using nlohmann::json;
using memory::EventKind;

// A trace is input (a file beside a record): a number that is not what the field holds.
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// object[key] as a whole number of type T, `fallback` when absent or null. nlohmann's value<T>
// would convert 3.5e119 to an integer (undefined behaviour) or wrap -1 to 2^64-1: refused here.
template <class T>
T whole(const json& object, const char* key, T fallback) {
  if (!object.is_object()) throw Malformed("an event or segment is not an object");
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (it->is_number_unsigned() && it->get<std::uint64_t>() <= std::uint64_t{std::numeric_limits<T>::max()}) {
    return static_cast<T>(it->get<std::uint64_t>());
  }
  if (it->is_number_integer() && !it->is_number_unsigned() && std::numeric_limits<T>::is_signed &&
      it->get<std::int64_t>() >= std::int64_t{std::numeric_limits<T>::min()}) {
    return static_cast<T>(it->get<std::int64_t>());
  }
  throw Malformed(std::string(key) + " is " + it->dump().substr(0, 40) + ", not a whole number in range");
}

bool kind_from_name(const std::string& name, EventKind& kind) {
  for (int k = 0; k < memory::kEventKindCount; ++k) {
    if (name == memory::event_kind_name(static_cast<EventKind>(k))) {
      kind = static_cast<EventKind>(k);
      return true;
    }
  }
  return false;
}

memory::Tag tag_of(const json& args) {
  if (!args.contains("tag") || !args["tag"].is_string()) return memory::Tag::other;
  return memory::tag_from_name(args["tag"].get<std::string>()).value_or(memory::Tag::other);
}

std::uint32_t site_of(const json& object, const std::vector<std::string>& sites) {
  if (!object.contains("site") || !object["site"].is_string()) return 0;
  const auto it = std::find(sites.begin(), sites.end(), object["site"].get<std::string>());
  return it == sites.end() ? 0 : static_cast<std::uint32_t>(it - sites.begin());
}

void read_state_before(const json& segments, RecordedTrace& trace) {
  for (const json& segment : segments) {
    memory::TraceEvent map;
    map.kind = EventKind::segment_map;
    map.segment = whole(segment, "segment", 0u);
    map.bytes = whole(segment, "mapped", std::size_t{0});
    map.stream = whole(segment, "stream", memory::StreamHandle{0});
    trace.before.apply(map);
    for (const json& block : segment.value("blocks", json::array())) {
      memory::TraceEvent alloc;
      alloc.kind = EventKind::alloc;
      alloc.segment = map.segment;
      alloc.offset = whole(block, "offset", std::size_t{0});
      alloc.bytes = whole(block, "bytes", std::size_t{0});
      alloc.tag = tag_of(block);
      alloc.site = site_of(block, trace.sites);
      alloc.sequence = whole(block, "sequence", std::uint64_t{0});
      trace.before.apply(alloc);
    }
  }
}

}  // namespace

RecordedTrace read_trace(const json& root, const std::string& path) {
  if (!root.is_object() || !root.contains("traceEvents") || !root["traceEvents"].is_array()) {
    throw InputError(path + ": not a Chrome trace (no traceEvents)");
  }
  RecordedTrace trace;
  trace.sites = {""};
  try {  // every part of the file is input: a wrong type is a malformed trace, never a crash
    const json other = root.value("otherData", json::object());
    if (other.contains("sites") && other["sites"].is_array()) {
      trace.sites = other["sites"].get<std::vector<std::string>>();
    }
    if (trace.sites.empty()) trace.sites = {""};
    trace.logical_time = other.value("time_axis", std::string()).rfind("logical", 0) == 0;
    trace.dropped = other.is_object() ? whole(other, "dropped_events", std::uint64_t{0}) : 0;
    if (other.contains("segments_before_events")) read_state_before(other["segments_before_events"], trace);
    for (const json& e : root["traceEvents"]) {
      if (!e.is_object() || e.value("ph", "") != "i" || whole(e, "pid", std::int64_t{0}) != 1) continue;
      memory::TraceEvent event;
      if (!kind_from_name(e.value("name", ""), event.kind)) continue;
      const json& args = e.at("args");
      event.time_us = e.value("ts", 0.0);
      event.sequence = whole(args, "sequence", std::uint64_t{0});
      event.bytes = whole(args, "bytes", std::size_t{0});
      event.segment = whole(args, "segment", 0u);
      event.offset = whole(args, "offset", std::size_t{0});
      event.tag = tag_of(args);
      event.step = whole(args, "step", std::int64_t{-1});
      event.allocated_after = whole(args, "allocated", std::int64_t{0});
      event.reserved_after = whole(args, "reserved", std::int64_t{0});
      event.tag_allocated_after = whole(args, "tag_bytes", std::int64_t{0});
      event.site = site_of(args, trace.sites);
      trace.events.push_back(event);
    }
  } catch (const json::exception& e) {
    throw InputError(path + ": the trace is malformed (" + std::string(e.what()) + ")");
  } catch (const Malformed& e) {
    throw InputError(path + ": the trace is malformed (" + std::string(e.what()) + ")");
  }
  return trace;
}

RecordedTrace read_trace_file(const std::string& path) {
  // Checked before reading (a regular file, within the cap): the path comes from a record's name.
  const std::string text = read_input_file(path, kMaxTraceFileBytes, "trace");
  json root;
  try {
    root = json::parse(text);
  } catch (const std::exception& e) {
    throw InputError(path + ": cannot read the trace (" + std::string(e.what()) + ")");
  }
  return read_trace(root, path);
}

}  // namespace oomlab::report
