#include "harness/report/record_match.hpp"

#include <filesystem>
#include <map>
#include <set>

#include "harness/runner/knobs.hpp"

namespace oomlab::report {

namespace {

std::set<std::string> device_kinds(const std::vector<LoadedRecord>& records) {
  std::set<std::string> kinds;
  for (const LoadedRecord& loaded : records) kinds.insert(loaded.record.device.kind);
  return kinds;
}

std::string base_key(const RunRecord& r, bool with_device) {
  return record_name(r) + " " + (with_device ? r.device.kind : std::string("*")) + "/" + r.scale;
}

std::string file_name(const LoadedRecord& loaded) { return std::filesystem::path(loaded.file).filename().string(); }

// Pairs the records of one group whose `refine` agree, one to one; leaves the rest in place.
template <class Refine>
void pair_by(std::vector<const LoadedRecord*>& a, std::vector<const LoadedRecord*>& b, Refine refine,
             std::vector<RecordPair>& pairs) {
  for (auto ia = a.begin(); ia != a.end();) {
    auto ib = b.begin();
    while (ib != b.end() && refine(**ib) != refine(**ia)) ++ib;
    if (ib == b.end()) {
      ++ia;
      continue;
    }
    pairs.push_back({*ia, *ib});
    b.erase(ib);
    ia = a.erase(ia);
  }
}

}  // namespace

std::string record_name(const RunRecord& record) { return record.scenario + "/" + record.variant; }

std::string record_setting(const RunRecord& record) {
  std::string text = record.device.kind + "/" + record.scale;
  if (!record.knobs.empty()) text += " " + describe_knobs(record.knobs);
  return text;
}

RecordMatch match_records(const std::vector<LoadedRecord>& a, const std::vector<LoadedRecord>& b) {
  RecordMatch match;
  const auto kinds_a = device_kinds(a);
  const auto kinds_b = device_kinds(b);
  match.across_devices = kinds_a.size() == 1 && kinds_b.size() == 1 && kinds_a != kinds_b;
  const bool with_device = !match.across_devices;

  std::map<std::string, std::pair<std::vector<const LoadedRecord*>, std::vector<const LoadedRecord*>>> groups;
  for (const LoadedRecord& loaded : a) {
    groups[base_key(loaded.record, with_device)].first.push_back(&loaded);
  }
  for (const LoadedRecord& loaded : b) groups[base_key(loaded.record, with_device)].second.push_back(&loaded);

  std::vector<RecordPair> pairs;
  for (auto& [key, group] : groups) {
    auto& [in_a, in_b] = group;
    if (in_a.size() == 1 && in_b.size() == 1) {
      // One each: the same variant even when its knobs changed (the change is then a finding).
      pairs.push_back({in_a.front(), in_b.front()});
      in_a.clear();
      in_b.clear();
      continue;
    }
    pair_by(in_a, in_b, [](const LoadedRecord& r) { return describe_knobs(r.record.knobs); }, pairs);
    pair_by(in_a, in_b, [](const LoadedRecord& r) { return file_name(r); }, pairs);
  }
  // In A's order, then what is left of each side in its own order.
  std::map<const LoadedRecord*, RecordPair> by_a;
  for (const RecordPair& pair : pairs) by_a[pair.a] = pair;
  for (const LoadedRecord& loaded : a) {
    if (auto it = by_a.find(&loaded); it != by_a.end()) {
      match.pairs.push_back(it->second);
    } else {
      match.only_a.push_back(&loaded);
    }
  }
  std::set<const LoadedRecord*> paired_b;
  for (const RecordPair& pair : pairs) paired_b.insert(pair.b);
  for (const LoadedRecord& loaded : b) {
    if (!paired_b.count(&loaded)) match.only_b.push_back(&loaded);
  }
  return match;
}

}  // namespace oomlab::report
