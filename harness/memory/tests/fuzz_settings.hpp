// How much the allocator fuzz test does, from the environment (see README.md, "Fuzzing"):
//   OOMLAB_FUZZ_OPS    operations per run (one allocator setting x one seed); default 120000
//   OOMLAB_FUZZ_SEEDS  seeds, comma-separated, each a number or a range "first-last";
//                      default "1-3"
// A value that does not parse is an error, never a silent default.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oomlab::memory::testing {

struct FuzzSettings {
  std::uint64_t operations = 120000;
  std::vector<std::uint64_t> seeds = {1, 2, 3};

  // What to set to run exactly this again: "OOMLAB_FUZZ_OPS=120000 OOMLAB_FUZZ_SEEDS=7".
  std::string rerun_command(std::uint64_t seed) const;
};

// Throw std::invalid_argument naming the variable, the (capped) value and what is expected.
std::uint64_t parse_fuzz_operations(std::string_view text);
std::vector<std::uint64_t> parse_fuzz_seeds(std::string_view text);

// The defaults, overridden by whichever of the two variables is set.
FuzzSettings fuzz_settings_from_env();

}  // namespace oomlab::memory::testing
