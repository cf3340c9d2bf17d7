// Parsing OOMLAB_FUZZ_OPS and OOMLAB_FUZZ_SEEDS.
#include "fuzz_settings.hpp"

#include <charconv>
#include <cstdlib>
#include <stdexcept>

#include "harness/memory/user_text.hpp"

namespace oomlab::memory::testing {
namespace {

// Enough for a week of fuzzing; "0-18446744073709551615" is a typo, not a plan.
constexpr std::uint64_t kMaxSeeds = 1000000;

[[noreturn]] void reject(const char* variable, std::string_view text, const std::string& expected) {
  throw std::invalid_argument(std::string(variable) + "=" + quote_user_text(text) + ": expected " + expected);
}

// Digits only, the whole text: from_chars alone would accept "12abc" as 12.
bool parse_whole_number(std::string_view text, std::uint64_t& value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  return error == std::errc() && stop == end;
}

// One item of the list: "7" or "1-64".
void append_seeds(std::string_view text, std::string_view item, std::vector<std::uint64_t>& seeds) {
  constexpr const char* kExpected =
      "seeds separated by commas, each a number or a range first-last (e.g. 1-64 or 7,42)";
  std::size_t dash = item.find('-');
  std::uint64_t first = 0, last = 0;
  bool ok = dash == std::string_view::npos
                ? parse_whole_number(item, first) && parse_whole_number(item, last)
                : parse_whole_number(trim_blanks(item.substr(0, dash)), first) &&
                      parse_whole_number(trim_blanks(item.substr(dash + 1)), last) && first <= last;
  if (!ok) reject("OOMLAB_FUZZ_SEEDS", text, kExpected);
  if (last - first >= kMaxSeeds - seeds.size()) {
    reject("OOMLAB_FUZZ_SEEDS", text, "at most " + std::to_string(kMaxSeeds) + " seeds in all");
  }
  for (std::uint64_t i = 0; i <= last - first; ++i) seeds.push_back(first + i);  // last may be 2^64-1
}

}  // namespace

std::string FuzzSettings::rerun_command(std::uint64_t seed) const {
  return "OOMLAB_FUZZ_OPS=" + std::to_string(operations) + " OOMLAB_FUZZ_SEEDS=" + std::to_string(seed);
}

std::uint64_t parse_fuzz_operations(std::string_view text) {
  constexpr const char* kExpected = "a whole number of operations per run, at least 1 (e.g. 100000000)";
  std::uint64_t operations = 0;
  if (!parse_whole_number(trim_blanks(text), operations) || operations == 0) {
    reject("OOMLAB_FUZZ_OPS", text, kExpected);
  }
  return operations;
}

std::vector<std::uint64_t> parse_fuzz_seeds(std::string_view text) {
  std::vector<std::uint64_t> seeds;
  std::size_t begin = 0;
  for (;;) {
    std::size_t comma = text.find(',', begin);
    std::string_view item = text.substr(begin, comma == std::string_view::npos ? comma : comma - begin);
    append_seeds(text, trim_blanks(item), seeds);
    if (comma == std::string_view::npos) return seeds;
    begin = comma + 1;
  }
}

FuzzSettings fuzz_settings_from_env() {
  FuzzSettings settings;
  if (const char* ops = std::getenv("OOMLAB_FUZZ_OPS")) settings.operations = parse_fuzz_operations(ops);
  if (const char* seeds = std::getenv("OOMLAB_FUZZ_SEEDS")) settings.seeds = parse_fuzz_seeds(seeds);
  return settings;
}

}  // namespace oomlab::memory::testing
