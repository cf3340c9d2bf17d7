#include "harness/report/record_match.hpp"

#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "harness/runner/knobs.hpp"
#include "harness/runner/scenario.hpp"

namespace oomlab::report {

namespace {

// A replay's variant is its snapshot's file name: before.pickle and after.pickle are the same
// program replayed twice, so replays match on the scenario alone (then on the file name).
std::string base_key(const RunRecord& r, bool with_device) {
  const std::string name = r.scenario == "replay" ? r.scenario : record_name(r);
  return name + " " + (with_device ? r.device.kind : std::string("*")) + "/" + r.scale;
}

std::string file_name(const LoadedRecord& loaded) { return std::filesystem::path(loaded.file).filename().string(); }

// Pairs the records of one group whose `refine` agree, one to one: each of `a` in order with the
// first of `b` left with its value. Leaves the rest in place, in order. Linear in the group (with
// a map): a group of one record against ten thousand must not cost their product.
template <class Refine>
void pair_by(std::vector<const LoadedRecord*>& a, std::vector<const LoadedRecord*>& b, Refine refine,
             std::vector<RecordPair>& pairs) {
  std::map<std::string, std::deque<std::size_t>> b_by_value;  // indices into b, in order
  for (std::size_t i = 0; i < b.size(); ++i) b_by_value[refine(*b[i])].push_back(i);
  std::vector<bool> b_paired(b.size(), false);
  std::vector<const LoadedRecord*> a_left;
  for (const LoadedRecord* record : a) {
    auto it = b_by_value.find(refine(*record));
    if (it == b_by_value.end() || it->second.empty()) {
      a_left.push_back(record);
      continue;
    }
    pairs.push_back({record, b[it->second.front()]});
    b_paired[it->second.front()] = true;
    it->second.pop_front();
  }
  std::vector<const LoadedRecord*> b_left;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (!b_paired[i]) b_left.push_back(b[i]);
  }
  a = std::move(a_left);
  b = std::move(b_left);
}

}  // namespace

std::string record_name(const RunRecord& record) { return record.scenario + "/" + record.variant; }

std::string record_setting(const RunRecord& record) {
  std::string text = record.device.kind + "/" + record.scale;
  const std::map<std::string, std::string> knobs = knobs_set_by_hand(record);
  if (!knobs.empty()) text += " " + describe_knobs(knobs);
  return text;
}

std::map<std::string, std::string> knobs_set_by_hand(const RunRecord& record) {
  // Every knob of a variant made its rows 300 characters wide; its own values say nothing.
  const Scenario* scenario = ScenarioRegistry::instance().find(record.scenario);
  const std::optional<Scale> scale = parse_scale(record.scale);
  if (scenario == nullptr || !scale) return record.knobs;
  bool known_variant = false;
  for (const VariantSpec& variant : scenario->variants())
    known_variant = known_variant || variant.name == record.variant;
  if (!known_variant) return record.knobs;
  const std::map<std::string, std::string> own = scenario->variant_knobs(record.variant, *scale);
  std::map<std::string, std::string> differs;
  for (const auto& [knob, value] : record.knobs) {
    const auto it = own.find(knob);
    if (it == own.end() || it->second != value) differs[knob] = value;
  }
  return differs;
}

namespace {

// Pairs the records of `a` and `b` that share a key; a pair's across_devices is !with_device.
std::vector<RecordPair> pair_records(const std::vector<const LoadedRecord*>& a,
                                     const std::vector<const LoadedRecord*>& b, bool with_device) {
  std::map<std::string, std::pair<std::vector<const LoadedRecord*>, std::vector<const LoadedRecord*>>> groups;
  for (const LoadedRecord* loaded : a) groups[base_key(loaded->record, with_device)].first.push_back(loaded);
  for (const LoadedRecord* loaded : b) groups[base_key(loaded->record, with_device)].second.push_back(loaded);
  std::vector<RecordPair> pairs;
  for (auto& [key, group] : groups) {
    auto& [in_a, in_b] = group;
    if (in_a.size() == 1 && in_b.size() == 1) {
      // One each: the same variant even when its knobs changed (the change is then a finding).
      pairs.push_back({in_a.front(), in_b.front()});
      in_a.clear();
      in_b.clear();
    } else {
      const bool replays = !in_a.empty() && in_a.front()->record.scenario == "replay";
      if (replays) pair_by(in_a, in_b, [](const LoadedRecord& r) { return r.record.variant; }, pairs);
      pair_by(in_a, in_b, [](const LoadedRecord& r) { return describe_knobs(r.record.knobs); }, pairs);
      pair_by(in_a, in_b, [](const LoadedRecord& r) { return file_name(r); }, pairs);
    }
  }
  for (RecordPair& pair : pairs) pair.across_devices = !with_device;
  return pairs;
}

}  // namespace

RecordMatch match_records(const std::vector<LoadedRecord>& a, const std::vector<LoadedRecord>& b) {
  std::vector<const LoadedRecord*> all_a, all_b;
  for (const LoadedRecord& loaded : a) all_a.push_back(&loaded);
  for (const LoadedRecord& loaded : b) all_b.push_back(&loaded);
  // On the same device first; what is left, across devices (a dry prediction and a GPU run).
  std::vector<RecordPair> pairs = pair_records(all_a, all_b, true);
  std::set<const LoadedRecord*> paired;
  for (const RecordPair& pair : pairs) paired.insert({pair.a, pair.b});
  std::vector<const LoadedRecord*> left_a, left_b;
  for (const LoadedRecord* r : all_a) {
    if (!paired.count(r)) left_a.push_back(r);
  }
  for (const LoadedRecord* r : all_b) {
    if (!paired.count(r)) left_b.push_back(r);
  }
  for (const RecordPair& pair : pair_records(left_a, left_b, false)) {
    if (pair.a->record.device.kind == pair.b->record.device.kind) continue;  // same device: a knob or file mismatch
    pairs.push_back(pair);
    paired.insert({pair.a, pair.b});
  }

  // In A's order, then what is left of each side in its own order.
  RecordMatch match;
  std::map<const LoadedRecord*, RecordPair> by_a;
  for (const RecordPair& pair : pairs) by_a[pair.a] = pair;
  for (const LoadedRecord* loaded : all_a) {
    if (auto it = by_a.find(loaded); it != by_a.end()) {
      match.pairs.push_back(it->second);
      match.across_devices = match.across_devices || it->second.across_devices;
    } else {
      match.only_a.push_back(loaded);
    }
  }
  for (const LoadedRecord* loaded : all_b) {
    if (!paired.count(loaded)) match.only_b.push_back(loaded);
  }
  return match;
}

}  // namespace oomlab::report
