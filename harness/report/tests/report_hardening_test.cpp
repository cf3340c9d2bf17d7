// The report's and compare's defences against hostile records (hardening issue): SVG text that
// stays XML, a page that copies no markup from names, and matching that stays fast.
#include <gtest/gtest.h>

#include <chrono>

#include <nlohmann/json.hpp>

#include "harness/report/comparison.hpp"
#include "harness/report/input_error.hpp"
#include "harness/report/markdown_report.hpp"
#include "harness/report/svg.hpp"
#include "harness/report/tests/sample_records.hpp"
#include "harness/report/trace_reader.hpp"

namespace oomlab::report {
namespace {

using testing::leak_record;

bool holds_control_bytes(const std::string& text) {
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n') || byte == 0x7f) return true;
  }
  return false;
}

TEST(SvgText, ControlBytesAndBrokenUtf8AreReplaced) {
  const std::string escaped = xml_escape(std::string("a\0b\x1b[31m\tc\xff\xc3(d<\xe2\x82\xac>", 19));
  EXPECT_FALSE(holds_control_bytes(escaped)) << escaped;
  EXPECT_EQ(escaped.find('\xff'), std::string::npos) << "not UTF-8: XML cannot hold it";
  EXPECT_NE(escaped.find("\xe2\x82\xac"), std::string::npos) << "valid UTF-8 stays";
  EXPECT_NE(escaped.find("&lt;"), std::string::npos);
  EXPECT_EQ(xml_escape("\xef\xbf\xbe").find("\xef\xbf\xbe"), std::string::npos) << "U+FFFE is not XML";
}

TEST(ReportPage, NamesAreTextNotMarkup) {
  ResultSet set;
  set.source = "runs`<b>";
  RunRecord record = leak_record();
  record.scenario = "<script>alert(1)</script>";
  record.variant = std::string("<svg onload=alert(1)>\x1b[2J\0", 26);
  record.git_commit = "`<img src=x onerror=alert(1)>";
  set.records.push_back({record, "r.json", false});
  const TraceProvider no_traces = [](const LoadedRecord&, std::string& why_not) -> std::optional<TraceSource> {
    why_not = "none\n# forged heading";
    return std::nullopt;
  };
  const ReportFiles files = build_report(set, no_traces, "charts");
  EXPECT_EQ(files.markdown.find("<script"), std::string::npos) << files.markdown;
  EXPECT_EQ(files.markdown.find("<svg"), std::string::npos) << files.markdown;
  // A commit is shown as code: a span its backticks cannot close, where markup is text.
  EXPECT_NE(files.markdown.find("Commit `` `<img src=x onerror=alert(1)> ``."), std::string::npos) << files.markdown;
  EXPECT_NE(files.markdown.find("``runs`<b>``"), std::string::npos) << files.markdown;
  EXPECT_EQ(files.markdown.find("\n# forged"), std::string::npos) << files.markdown;
  EXPECT_FALSE(holds_control_bytes(files.markdown)) << files.markdown;
  for (const auto& [name, svg] : files.charts) {
    EXPECT_FALSE(holds_control_bytes(svg)) << name;
    EXPECT_EQ(name.find('/'), std::string::npos) << name;
    EXPECT_EQ(svg.find("<script"), std::string::npos) << name;
  }
}

// Found by report_input_fuzz: nlohmann's value<size_t> on 3.5e119 is undefined behaviour, and a
// segment list of the wrong type threw past the reader's InputError (exit 1, not 2).
TEST(TraceReader, NumbersOutOfRangeAndWrongTypesAreAMalformedTrace) {
  for (const char* text : {R"({"traceEvents":[{"ph":"i","pid":1,"name":"alloc","args":{"bytes":3.5e119}}]})",
                           R"({"traceEvents":[{"ph":"i","pid":1,"name":"alloc","args":{"bytes":-1}}]})",
                           R"({"traceEvents":[],"otherData":{"segments_before_events":[1]}})",
                           R"({"traceEvents":[],"otherData":{"sites":[1]}})"}) {
    SCOPED_TRACE(text);
    EXPECT_THROW(read_trace(nlohmann::json::parse(text), "t.json"), InputError);
  }
}

TEST(RecordMatching, OneRecordAgainstTenThousandWithTheSameKeyIsQuick) {
  ResultSet a, b;
  a.source = "a";
  b.source = "b";
  a.records.push_back({leak_record(), "r.json", false});
  for (int i = 0; i < 10000; ++i) b.records.push_back({leak_record(), "r" + std::to_string(i) + ".json", false});
  const auto start = std::chrono::steady_clock::now();
  const Comparison comparison = compare_result_sets(a, b, {});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(comparison.only_b.size(), 9999u);
  EXPECT_LT(seconds, 3.0) << "matching must not be quadratic";
}

TEST(ReportPage, TenThousandRecordsOfOneVariantAreQuick) {
  ResultSet set;
  set.source = "runs";
  for (int i = 0; i < 10000; ++i) set.records.push_back({leak_record(), "r" + std::to_string(i) + ".json", false});
  const TraceProvider no_traces = [](const LoadedRecord&, std::string& why_not) -> std::optional<TraceSource> {
    why_not = "none";
    return std::nullopt;
  };
  const auto start = std::chrono::steady_clock::now();
  const ReportFiles files = build_report(set, no_traces, "charts");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(files.charts.empty());
  EXPECT_LT(seconds, 3.0) << "labelling bars must not be quadratic";
}

}  // namespace
}  // namespace oomlab::report
