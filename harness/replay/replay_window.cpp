#include "harness/replay/replay_window.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "harness/memory/user_text.hpp"

namespace oomlab::replay {
namespace {

struct Bound {
  std::optional<std::size_t> entry;  // entry:N
  std::int64_t after_first_us = 0;   // else a time since the first entry
};

[[noreturn]] void refuse(const char* option, const std::string& text, const std::string& problem) {
  throw std::invalid_argument(std::string(option) + " " + quote_user_text(text, 60) + ": " + problem);
}

Bound parse_bound(const char* option, const std::string& text) {
  Bound bound;
  const std::string entry_prefix = "entry:";
  if (text.rfind(entry_prefix, 0) == 0) {
    const std::string digits = text.substr(entry_prefix.size());
    if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) {
      refuse(option, text, "entry:N takes a trace entry's index (0, 1, ...)");
    }
    bound.entry = static_cast<std::size_t>(std::stoull(digits));
    return bound;
  }
  static const struct {
    const char* unit;
    double us;
  } kUnits[] = {{"us", 1}, {"ms", 1e3}, {"s", 1e6}};
  for (const auto& unit : kUnits) {
    const std::string suffix = unit.unit;
    if (text.size() <= suffix.size() || text.compare(text.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    const std::string number = text.substr(0, text.size() - suffix.size());
    if (number.find_first_not_of("0123456789.") != std::string::npos) break;  // "1ms" ends with "s" too: ms first
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(number.c_str(), &end);
    if (errno != 0 || end != number.c_str() + number.size() || !std::isfinite(value) || value * unit.us > 9e18) break;
    bound.after_first_us = static_cast<std::int64_t>(std::llround(value * unit.us));
    return bound;
  }
  refuse(option, text,
         "not a window bound: entry:N (a trace entry) or a time since the first entry (12.5s, 300ms, 1500us)");
}

std::string seconds(std::int64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3fs", static_cast<double>(us) / 1e6);
  return text;
}

// The trace entry a bound names: entry:N itself, or the entry of the first event at or after the
// time (times are those of the events, which are the trace's entries but for unknown actions).
std::size_t entry_of(const char* option, const std::string& text, const Bound& bound, const DeviceEvents& device) {
  if (bound.entry) {
    if (*bound.entry > device.trace_entries) {
      refuse(option, text, "past the trace, which has " + std::to_string(device.trace_entries) + " entries (0 to " +
                               std::to_string(device.trace_entries - 1) + ")");
    }
    return *bound.entry;
  }
  const std::vector<ReplayEvent>& events = device.events;
  if (events.front().time_us == 0) refuse(option, text, "the trace has no times (time_us): use entry:N");
  const std::int64_t first = events.front().time_us, span = events.back().time_us - first;
  if (bound.after_first_us > span) refuse(option, text, "past the trace, which spans " + seconds(span));
  const std::int64_t at = first + bound.after_first_us;
  for (const ReplayEvent& event : events) {
    if (event.time_us >= at) return event.trace_index;
  }
  return device.trace_entries;
}

// The first event made from trace entry `entry` or a later one.
std::size_t first_event_from(const DeviceEvents& device, std::size_t entry) {
  for (std::size_t i = 0; i < device.events.size(); ++i) {
    if (device.events[i].trace_index >= entry) return i;
  }
  return device.events.size();
}

bool is_request(ReplayEventKind kind) {
  return kind == ReplayEventKind::alloc || kind == ReplayEventKind::free || kind == ReplayEventKind::oom ||
         kind == ReplayEventKind::empty_cache;
}

}  // namespace

ReplayWindow resolve_window(const DeviceEvents& device, const std::string& from, const std::string& to) {
  ReplayWindow window;
  window.end_entry = device.trace_entries;
  window.end_event = device.events.size();
  if (from.empty() && to.empty()) return window;
  window.whole = false;
  if (device.events.empty()) throw std::invalid_argument("--from/--to: the trace has no entries");
  std::optional<Bound> from_bound, to_bound;
  if (!from.empty()) from_bound = parse_bound("--from", from);
  if (!to.empty()) to_bound = parse_bound("--to", to);
  if (from_bound) window.begin_entry = entry_of("--from", from, *from_bound, device);
  if (to_bound) window.end_entry = entry_of("--to", to, *to_bound, device);
  const bool same_kind = from_bound && to_bound && from_bound->entry.has_value() == to_bound->entry.has_value();
  const bool bounds_ordered =
      !same_kind || (from_bound->entry ? *from_bound->entry < *to_bound->entry
                                       : from_bound->after_first_us < to_bound->after_first_us);
  if (bounds_ordered && window.begin_entry >= window.end_entry) {
    throw std::invalid_argument("--from " + quote_user_text(from, 60) + " --to " + quote_user_text(to, 60) +
                                ": no trace entry falls in the window (both bounds land on entry " +
                                std::to_string(window.begin_entry) + ")");
  }
  if (window.begin_entry >= window.end_entry) {
    throw std::invalid_argument("--from " + quote_user_text(from.empty() ? "entry:0" : from, 60) +
                                " is not before --to " + quote_user_text(to.empty() ? "the end" : to, 60) +
                                " (entries " + std::to_string(window.begin_entry) + " and " +
                                std::to_string(window.end_entry) + ")");
  }
  window.begin_event = first_event_from(device, window.begin_entry);
  window.end_event = first_event_from(device, window.end_entry);
  std::size_t requests = 0;
  for (std::size_t i = window.begin_event; i < window.end_event; ++i) requests += is_request(device.events[i].kind);
  window.text = "entries " + std::to_string(window.begin_entry) + " to " + std::to_string(window.end_entry - 1);
  const std::int64_t first = device.events.front().time_us;
  if (first != 0 && window.begin_event < window.end_event) {
    window.text += " (" + seconds(device.events[window.begin_event].time_us - first) + " to " +
                   seconds(device.events[window.end_event - 1].time_us - first) + " after the first entry)";
  }
  if (requests == 0) {
    throw std::invalid_argument("--from/--to: the window, " + window.text + ", holds no requests (allocs, frees)");
  }
  return window;
}

DeviceEvents window_events(const DeviceEvents& device, const ReplayWindow& window) {
  DeviceEvents out;
  out.device = device.device;
  out.events.assign(device.events.begin() + static_cast<std::ptrdiff_t>(window.begin_event),
                    device.events.begin() + static_cast<std::ptrdiff_t>(window.end_event));
  for (ReplayEvent& event : out.events) {
    if (event.alloc_event != kNoEvent) {
      event.alloc_event = event.alloc_event < window.begin_event ? kNoEvent : event.alloc_event - window.begin_event;
    }
    out.allocs += event.kind == ReplayEventKind::alloc;
    out.frees += event.kind == ReplayEventKind::free;
    out.ooms += event.kind == ReplayEventKind::oom;
    out.empty_caches += event.kind == ReplayEventKind::empty_cache;
  }
  return out;
}

std::uint64_t pytorch_peak_in_window(const ReplayPlan& plan, const ReplayWindow& window) {
  std::int64_t reserved = static_cast<std::int64_t>(plan.pytorch_reserved_at_start);
  std::int64_t peak = 0;
  bool started = false;
  for (const SegmentDecision& decision : plan.decisions) {
    if (decision.event >= window.end_event) break;
    if (!started && decision.event >= window.begin_event) {
      peak = reserved;  // what the window starts with
      started = true;
    }
    const auto delta = static_cast<std::int64_t>(decision.size);
    reserved += is_release(decision.kind) ? -delta : delta;
    if (started) peak = std::max(peak, reserved);
  }
  if (!started) peak = reserved;
  return static_cast<std::uint64_t>(std::max<std::int64_t>(peak, 0));
}

}  // namespace oomlab::replay
