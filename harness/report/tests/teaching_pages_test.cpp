// The teaching pages' measured numbers come from committed records: a number on a page is
// written between `<!-- from RECORD FIELD -->` and `<!-- end -->` (invisible once rendered),
// RECORD a JSON file under the source tree (a baseline, a results/ record), FIELD a dotted path in
// it ("memory.peak_allocated", "memory.per_tag_peak.activations", "outcome.step"). The test fails
// when a page's number differs from its record at the precision the page shows ("12.3 GiB" is the
// record's bytes in GiB to one decimal). OOMLAB_UPDATE_PAGES=1 rewrites the numbers instead,
// keeping each one's unit and decimals: run it after regenerating baselines or results.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const fs::path kRoot = OOMLAB_SOURCE_DIR;
const std::regex kMarker(R"(<!-- from (\S+) (\S+) -->([^<]*)<!-- end -->)");
// What a shown unit divides the record's value by: bytes, and "K" for thousands ("424.5K" tokens/s).
// Any other unit ("GB" of a benchmark's peak_allocated_GB, "ms") is the record's own.
const std::map<std::string, double> kUnitScales = {
    {"B", 1.0},        {"KiB", 1024.0}, {"MiB", 1024.0 * 1024}, {"GiB", 1024.0 * 1024 * 1024},
    {"TiB", 1024.0 * 1024 * 1024 * 1024}, {"K", 1000.0}};

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<fs::path> pages() {
  std::vector<fs::path> out = {kRoot / "README.md"};
  for (const char* folder : {"scenarios", "docs"}) {
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / folder)) {
      if (entry.path().extension() == ".md") out.push_back(entry.path());
    }
  }
  return out;
}

// The number a page shows, its decimals and its unit ("12.3 GiB" -> 12.3, 1, "GiB").
struct Shown {
  double value = 0;
  int decimals = 0;
  std::string unit;
  bool numeric = false;
};

Shown parse_shown(const std::string& text) {
  static const std::regex number(R"(^\s*(-?[0-9]+)(?:\.([0-9]+))?\s*(\S*)\s*$)");
  std::smatch m;
  Shown shown;
  if (!std::regex_match(text, m, number)) return shown;
  shown.numeric = true;
  shown.value = std::stod(m[1].str() + (m[2].matched ? "." + m[2].str() : ""));
  shown.decimals = m[2].matched ? static_cast<int>(m[2].length()) : 0;
  shown.unit = m[3].str();
  return shown;
}

// The record's value as the page would show it, in the page's unit and decimals.
std::string as_shown(const Json& value, const Shown& shown, const std::string& text) {
  if (!shown.numeric || !value.is_number()) return value.is_string() ? value.get<std::string>() : value.dump();
  double number = value.get<double>();
  const auto scale = kUnitScales.find(shown.unit);
  if (scale != kUnitScales.end()) number /= scale->second;
  char out[64];
  std::snprintf(out, sizeof out, "%.*f", shown.decimals, number);
  // The number replaced, the page's spacing and unit kept.
  const auto lead = text.find_first_not_of(' ');
  const auto end = text.find_first_not_of("0123456789.-", lead);
  return text.substr(0, lead) + out + (end == std::string::npos ? "" : text.substr(end));
}

// Google Benchmark writes a counter's cv of a zero mean as a bare NaN, which JSON has not: the
// benchmark files the pages cite are read with those values as null.
Json parse_record(const std::string& text) {
  static const std::regex non_finite(R"((:\s*)-?(?:NaN|nan|Infinity|inf)\b)");
  return Json::parse(std::regex_replace(text, non_finite, "$1null"));
}

Json field(const Json& record, const std::string& dotted) {
  std::string pointer = "/" + dotted;
  for (char& c : pointer) c = c == '.' ? '/' : c;
  return record.at(Json::json_pointer(pointer));
}

TEST(TeachingPages, EveryMarkedNumberEqualsItsRecord) {
  const bool update = std::getenv("OOMLAB_UPDATE_PAGES") != nullptr;
  int markers = 0;
  std::vector<std::string> wrong;
  for (const fs::path& page : pages()) {
    const std::string text = read(page);
    std::string rewritten;
    std::size_t copied = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), kMarker); it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      ++markers;
      const std::string where = fs::relative(page, kRoot).string() + ": " + m[1].str() + " " + m[2].str();
      const fs::path record_path = kRoot / m[1].str();
      ASSERT_TRUE(fs::is_regular_file(record_path)) << where << ": no such record";
      Json value;
      try {
        value = field(parse_record(read(record_path)), m[2].str());
      } catch (const std::exception& e) {
        FAIL() << where << ": " << e.what();
      }
      const std::string shown_text = m[3].str();
      const std::string expected = as_shown(value, parse_shown(shown_text), shown_text);
      if (expected != shown_text)
        wrong.push_back(where + ": the page says '" + shown_text + "', the record '" + expected + "'");
      const auto value_at = static_cast<std::size_t>(m.position(3));
      rewritten += text.substr(copied, value_at - copied) + expected;
      copied = value_at + shown_text.size();
    }
    if (update && copied > 0) {
      rewritten += text.substr(copied);
      std::ofstream(page) << rewritten;
    }
  }
  EXPECT_GT(markers, 20) << "the teaching pages lost their record markers";
  if (!update) {
    for (const std::string& line : wrong) ADD_FAILURE() << line << " (OOMLAB_UPDATE_PAGES=1 rewrites the pages)";
  }
}

TEST(TeachingPages, ShownNumbersRoundTheRecordAtThePagePrecision) {
  const Shown gib = parse_shown("12.3 GiB");
  EXPECT_EQ(as_shown(Json(13201694720.0), gib, "12.3 GiB"), "12.3 GiB");  // 12.295 GiB
  EXPECT_EQ(as_shown(Json(13201694720.0), parse_shown("12.30GiB"), "12.30GiB"), "12.30GiB");
  EXPECT_EQ(as_shown(Json(14), parse_shown("14"), "14"), "14");
  EXPECT_EQ(as_shown(Json(439905.8), parse_shown(" 439906 tokens/s"), " 439906 tokens/s"), " 439906 tokens/s");
  EXPECT_EQ(as_shown(Json(424495.79), parse_shown("424.5K"), "424.5K"), "424.5K");
  EXPECT_EQ(as_shown(Json(7.519268352), parse_shown("7.52 GB"), "7.52 GB"), "7.52 GB") << "the record's unit";
  EXPECT_EQ(as_shown(Json("capacity"), parse_shown("capacity"), "capacity"), "capacity");
}

}  // namespace
