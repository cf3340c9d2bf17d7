// The knobs of serve7b and each variant's values per scale. A variant is a way to serve (cache
// kind, weights dtype, KV dtype, concurrency, truncation); the workload knobs say what is served:
//
//   variant               cache    dtype  kv_dtype  concurrency (full)  truncate_prompt
//   broken-f32            paged    f32    bf16      16                  0
//   broken-padded         padded   bf16   bf16      16                  0
//   broken-growing-cache  growing  bf16   bf16      8                   0
//   fixed-half            padded   bf16   bf16      1                   0
//   fixed-shorter-input   padded   bf16   bf16      16                  512 (answers change)
//   fixed-paged           paged    bf16   bf16      16                  0
//   fixed-kv-int8         paged    bf16   int8      32                  0
#pragma once
#include <map>
#include <string>
#include <vector>

#include "harness/runner/knobs.hpp"
#include "harness/runner/scenario.hpp"
#include "scenarios/serve7b/serve_run.hpp"

namespace oomlab::scenarios::serve7b {

inline constexpr const char* kBrokenF32 = "broken-f32";
inline constexpr const char* kBrokenPadded = "broken-padded";
inline constexpr const char* kBrokenGrowing = "broken-growing-cache";
inline constexpr const char* kFixedHalf = "fixed-half";
inline constexpr const char* kFixedShorter = "fixed-shorter-input";
inline constexpr const char* kFixedPaged = "fixed-paged";
inline constexpr const char* kFixedKvInt8 = "fixed-kv-int8";

std::vector<std::string> variant_names();
std::vector<KnobSpec> knob_specs();
std::map<std::string, std::string> knob_values(const std::string& variant, Scale scale);
// The plan with the knob values applied; `requests` is the run's step count (steps = requests
// served). Throws std::invalid_argument, one line, for values with no meaning together.
serve::ServePlan make_plan(const KnobValues& knobs, int requests);

}  // namespace oomlab::scenarios::serve7b
