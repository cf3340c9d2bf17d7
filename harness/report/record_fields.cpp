#include "harness/report/record_fields.hpp"

#include <limits>
#include <map>

#include "harness/memory/size.hpp"
#include "harness/report/number_format.hpp"

namespace oomlab::report {

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A metric that names bytes ("weights_bytes", "leak_bytes_per_step", "free_reserved_before_checkpoint",
// "largest_free_block_..."), not a ratio of them ("peak_bytes_per_parameter").
bool is_byte_metric(std::string_view name) {
  if (ends_with(name, "per_parameter")) return false;
  for (std::string_view word : {"bytes", "reserved", "allocated", "block"}) {
    if (name.find(word) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

FieldValue FieldValue::of_text(std::string text) {
  FieldValue value;
  value.text = std::move(text);
  return value;
}

FieldValue FieldValue::of_bytes(std::uint64_t bytes) {
  FieldValue value;
  value.kind = Kind::bytes;
  value.whole = bytes;
  return value;
}

FieldValue FieldValue::of_integer(std::int64_t integer) {
  if (integer < 0) return of_text(std::to_string(integer));
  FieldValue value;
  value.kind = Kind::integer;
  value.whole = static_cast<std::uint64_t>(integer);
  return value;
}

FieldValue FieldValue::of_number(double number) {
  FieldValue value;
  value.kind = Kind::number;
  value.number = number;
  return value;
}

bool FieldValue::operator==(const FieldValue& other) const {
  if (kind != other.kind) return false;
  switch (kind) {
    case Kind::text: return text == other.text;
    case Kind::bytes:
    case Kind::integer: return whole == other.whole;
    case Kind::number: return number == other.number;
  }
  return false;
}

bool is_timing_metric(std::string_view name) {
  for (std::string_view word : {"second", "_ms", "ms.", "ms_", "fraction"}) {
    if (name.find(word) != std::string_view::npos) return true;
  }
  return false;
}

std::string without_process_ids(std::string text) {
  for (std::size_t at = text.find("pid "); at != std::string::npos; at = text.find("pid ", at + 4)) {
    std::size_t end = at + 4;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    if (end > at + 4) text.replace(at + 4, end - at - 4, "N");
  }
  return text;
}

FieldList deterministic_fields(const RunRecord& r) {
  FieldList fields;
  const auto add = [&](std::string name, FieldValue value) { fields.emplace_back(std::move(name), std::move(value)); };
  add("outcome", FieldValue::of_text(outcome_status_name(r.outcome.status)));
  if (!r.outcome.diagnosis.empty()) add("diagnosis", FieldValue::of_text(r.outcome.diagnosis));
  if (r.outcome.step >= 0) {
    add(r.outcome.status == OutcomeStatus::oom ? "oom step" : "step", FieldValue::of_integer(r.outcome.step));
  }
  if (r.outcome.signal != 0) add("signal", FieldValue::of_integer(r.outcome.signal));
  if (!r.outcome.message.empty()) add("message", FieldValue::of_text(without_process_ids(r.outcome.message)));
  add("expected", FieldValue::of_text(r.expected));
  add("budget", FieldValue::of_bytes(r.budget.bytes));
  if (!r.budget.profile.empty()) add("budget profile", FieldValue::of_text(r.budget.profile));
  add("steps", FieldValue::of_integer(r.steps));
  add("warm-up steps", FieldValue::of_integer(r.warmup_steps));
  add("alloc_conf", FieldValue::of_text(r.alloc_conf));
  for (const auto& [knob, value] : r.knobs) add("knob " + knob, FieldValue::of_text(value));
  add("peak_allocated", FieldValue::of_bytes(r.memory.peak_allocated));
  add("peak_reserved", FieldValue::of_bytes(r.memory.peak_reserved));
  // On cuda the device-level number includes the context and other processes: measured.
  if (r.device.kind != "cuda") add("peak_device_used", FieldValue::of_bytes(r.memory.peak_device_used));
  if (r.memory.need != 0) add("need", FieldValue::of_bytes(r.memory.need));
  if (r.memory.need_reserved != 0) add("need_reserved", FieldValue::of_bytes(r.memory.need_reserved));
  for (const auto& [tag, bytes] : r.memory.per_tag_peak) add("peak of tag " + tag, FieldValue::of_bytes(bytes));
  add("num_ooms", FieldValue::of_integer(static_cast<std::int64_t>(r.memory.num_ooms)));
  add("num_alloc_retries", FieldValue::of_integer(static_cast<std::int64_t>(r.memory.num_alloc_retries)));
  for (const auto& [name, value] : r.metrics) {
    if (!is_timing_metric(name)) add("metric " + name, FieldValue::of_number(value));
  }
  for (std::size_t i = 0; i < r.warnings.size(); ++i) {
    add("warning " + std::to_string(i + 1), FieldValue::of_text(without_process_ids(r.warnings[i])));
  }
  return fields;
}

std::string describe_outcome(const Outcome& outcome) {
  std::string text = outcome_status_name(outcome.status);
  if (outcome.step >= 0) text += " @ step " + std::to_string(outcome.step);
  if (!outcome.diagnosis.empty()) text += " (" + outcome.diagnosis + ")";
  if (outcome.signal != 0) text += " (signal " + std::to_string(outcome.signal) + ")";
  return text;
}

std::string format_field(const std::string& name, const FieldValue& value) {
  switch (value.kind) {
    case FieldValue::Kind::text: return value.text;
    case FieldValue::Kind::bytes:
      if (value.whole == std::numeric_limits<std::uint64_t>::max()) return "unlimited";
      return format_size(value.whole);
    case FieldValue::Kind::integer: return std::to_string(value.whole);
    case FieldValue::Kind::number:
      if (is_byte_metric(name) && value.number >= 0 && value.number < 1.8e19) {
        return format_size(static_cast<std::size_t>(value.number));
      }
      return format_number(value.number, 6);
  }
  return "?";
}

std::string describe_change(const std::string& name, const FieldValue* before, const FieldValue* after) {
  const std::string from = before ? format_field(name, *before) : "(none)";
  const std::string to = after ? format_field(name, *after) : "(none)";
  std::string text = name + " " + from + " -> " + to;
  if (before && after && before->kind == FieldValue::Kind::bytes && after->kind == FieldValue::Kind::bytes &&
      before->whole != std::numeric_limits<std::uint64_t>::max() &&
      after->whole != std::numeric_limits<std::uint64_t>::max()) {
    const auto delta = static_cast<std::int64_t>(after->whole - before->whole);
    // Two sizes that print alike still differ: the delta says by how much.
    text += " (" + format_size_delta(delta) + ")";
  }
  return text;
}

bool in_scope(const std::string& name, FieldScope scope) {
  if (scope == FieldScope::all) return true;
  for (const char* prefix : {"metric ", "warning ", "message", "peak_device_used"}) {
    if (name.rfind(prefix, 0) == 0) return false;
  }
  return true;
}

std::vector<std::string> field_differences(const RunRecord& before, const RunRecord& after, FieldScope scope) {
  FieldList want, got;
  for (auto& field : deterministic_fields(before)) {
    if (in_scope(field.first, scope)) want.push_back(std::move(field));
  }
  for (auto& field : deterministic_fields(after)) {
    if (in_scope(field.first, scope)) got.push_back(std::move(field));
  }
  std::map<std::string, const FieldValue*> got_by_name;
  for (const auto& [name, value] : got) got_by_name[name] = &value;
  std::vector<std::string> changes;
  for (const auto& [name, value] : want) {
    auto it = got_by_name.find(name);
    const FieldValue* now = it == got_by_name.end() ? nullptr : it->second;
    if (!now || *now != value) changes.push_back(describe_change(name, &value, now));
    if (it != got_by_name.end()) got_by_name.erase(it);
  }
  // Fields only the new record has, in its reading order.
  for (const auto& [name, value] : got) {
    if (got_by_name.count(name)) changes.push_back(describe_change(name, nullptr, &value));
  }
  return changes;
}

}  // namespace oomlab::report
