// Which record of one set is which record of another: by scenario/variant, device kind, scale
// and knobs. Used by compare (two result sets) and by the regression test (baselines vs a fresh
// suite), so both match the same way.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "harness/report/result_set.hpp"

namespace oomlab::report {

// "srgan_leak/broken"
std::string record_name(const RunRecord& record);
// "dry/full", plus " batch=24,dtype=bf16": the knobs set by hand (knobs_set_by_hand).
std::string record_setting(const RunRecord& record);
// The record's knobs that differ from its variant's own values at its scale, when its scenario is
// registered here; else every knob it names.
std::map<std::string, std::string> knobs_set_by_hand(const RunRecord& record);

struct RecordPair {
  const LoadedRecord* a = nullptr;
  const LoadedRecord* b = nullptr;
  // Records of different devices (a dry prediction and a cuda run): their allocator-level
  // numbers must agree exactly, their device-level ones and throughput are not comparable.
  bool across_devices = false;
};

struct RecordMatch {
  std::vector<RecordPair> pairs;  // in A's order
  std::vector<const LoadedRecord*> only_a;
  std::vector<const LoadedRecord*> only_b;
  bool across_devices = false;  // some pair is across devices
};

// Records match on scenario, variant, scale and device kind; records left over then match across
// devices (a dry/small baseline and a GPU's cuda/small record). Where several records of one set
// share those, their knobs tell them apart, then their file names.
RecordMatch match_records(const std::vector<LoadedRecord>& a, const std::vector<LoadedRecord>& b);

}  // namespace oomlab::report
