// libFuzzer target for what compare and report read and make, all in memory (no re-runs, no
// files): any bytes are one file of a result set (a run record or an array of them, a baseline,
// Google Benchmark JSON, a suite summary or a trace), or two such files separated by a NUL byte
// (JSON holds none) for the two sides of a comparison. Each must load or throw InputError,
// compare or throw InputError, and print; a loaded set becomes the report's page and charts,
// with the input itself as every record's trace when it reads as one. Never a crash, hang, read
// out of bounds or UB; and what the report writes holds no control bytes, its chart names no
// folder, so the page and the SVGs stay text and stay where they are put.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/report/comparison.hpp"
#include "harness/report/comparison_print.hpp"
#include "harness/report/input_error.hpp"
#include "harness/report/markdown_report.hpp"
#include "harness/report/result_set.hpp"
#include "harness/report/trace_reader.hpp"
#include "harness/runner/json_text.hpp"

using namespace oomlab;
using namespace oomlab::report;

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

// Text, one line per '\n': no other C0 byte and no DEL (a NUL or ESC makes an SVG invalid XML and
// drives a terminal).
bool printable_lines(const std::string& text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n') || byte == 0x7F) return false;
  }
  return true;
}

std::optional<ResultSet> load(const std::string& text, const char* name) {
  try {
    return result_set_from_text(text, name);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

void compare_and_print(const ResultSet& a, const ResultSet& b) {
  try {
    const Comparison comparison = compare_result_sets(a, b, {});
    require(printable_lines(comparison_text(comparison, {true, false})));
    json_text(comparison_json(comparison), 2);
  } catch (const InputError&) {
  }
}

void report_of(const ResultSet& set, const std::string& text) {
  // The input as a trace, when it is one: the timeline and segment charts from hostile events.
  std::optional<RecordedTrace> trace;
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_discarded()) {
    try {
      trace = read_trace(json, "input");
    } catch (const InputError&) {
    }
  }
  const TraceProvider traces = [&](const LoadedRecord&, std::string& why_not) -> std::optional<TraceSource> {
    if (!trace) {
      why_not = "no trace";
      return std::nullopt;
    }
    return TraceSource{*trace, "the input"};
  };
  const ReportFiles files = build_report(set, traces, "charts");
  require(printable_lines(files.markdown));
  for (const auto& [name, svg] : files.charts) {
    require(!name.empty() && name.front() != '.' && name.find('/') == std::string::npos);
    require(printable_lines(svg));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string first = input.substr(0, nul);
  const std::string second = nul == std::string::npos ? first : input.substr(nul + 1);
  const std::optional<ResultSet> a = load(first, "a.json");
  const std::optional<ResultSet> b = nul == std::string::npos ? a : load(second, "b.json");
  if (a && b) compare_and_print(*a, *b);
  if (a) report_of(*a, first);
  return 0;
}
