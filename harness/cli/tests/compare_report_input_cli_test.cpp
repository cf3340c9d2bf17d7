// Bad input to oomlab compare and oomlab report (hardening issue): files that are not regular or
// too large, numbers no run can have, folders with link loops, names that are not UTF-8 or hold
// control characters. Each is one "oomlab: error:" line and exit 2, in bounded time and memory.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/bounded_oomlab.hpp"
#include "harness/runner/atomic_file.hpp"

namespace oomlab::cli_test {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const std::string kRecord = std::string(OOMLAB_SOURCE_DIR) + "/results/h200/full/gpt_train.bf16.cuda-full.json";

Json sample_record() { return Json::parse(read_text_file(kRecord)); }

void write_json(const std::string& path, const Json& json) {
  fs::create_directories(fs::path(path).parent_path());
  write_file_atomically(path, json.dump(2));
}

TEST(CompareReportInput, CharacterDevicesAndFifosAreRefusedBeforeReading) {
  TempDir dir;
  write_json(dir.path("a/r.json"), sample_record());
  expect_bounded_usage_error({"compare", "/dev/zero", dir.path("a")}, "not a regular file");
  expect_bounded_usage_error({"compare", dir.path("a"), "/dev/zero"}, "not a regular file");
  expect_bounded_usage_error({"report", "/dev/zero", "--no-rerun", "-o", dir.path("out/report.md")},
                             "not a regular file");
  ASSERT_EQ(::mkfifo(dir.path("fifo.json").c_str(), 0600), 0);
  expect_bounded_usage_error({"compare", dir.path("fifo.json"), dir.path("a")}, "not a regular file");
  expect_bounded_usage_error({"report", dir.path("fifo.json"), "--no-rerun", "-o", dir.path("out/report.md")},
                             "not a regular file");
}

TEST(CompareReportInput, AFileOverTheSizeCapIsRefusedUnread) {
  TempDir dir;
  write_json(dir.path("a/r.json"), sample_record());
  // Sparse: 2 GB on the disk's books, nothing written.
  {
    std::ofstream huge(dir.path("a/huge.json"));
  }
  fs::resize_file(dir.path("a/huge.json"), 2'000'000'000);
  expect_bounded_usage_error({"compare", dir.path("a"), kRecord}, "64.00MiB", {10, 4ull << 30});
  expect_bounded_usage_error({"report", dir.path("a"), "--no-rerun", "-o", dir.path("out/report.md")}, "64.00MiB",
                             {10, 4ull << 30});
}

TEST(CompareReportInput, ByteCountsMustBeWholeNumbersThatFitIn64Bits) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"memory.peak_allocated", "1e308"},  {"memory.peak_allocated", "18446744073709551621"},
      {"memory.peak_reserved", "1.5"},     {"memory.peak_allocated", "-5"},
      {"budget.bytes", "-1"},              {"memory.per_tag_peak.weights", "-7"}};
  for (const auto& [field, number] : bad) {
    TempDir dir;
    std::string text = sample_record().dump(2);
    // The number as written: nlohmann would print 2^64+5 as a double.
    Json record = sample_record();
    const std::string marker = "123456789012345";
    if (field == "budget.bytes") record["budget"]["bytes"] = std::stoull(marker);
    else if (field == "memory.per_tag_peak.weights") record["memory"]["per_tag_peak"]["weights"] = std::stoull(marker);
    else record["memory"][field.substr(7)] = std::stoull(marker);
    text = record.dump(2);
    text.replace(text.find(marker), marker.size(), number);
    const std::string path = dir.path("bad.json");
    write_file_atomically(path, text);
    SCOPED_TRACE(field + " = " + number);
    expect_bounded_usage_error({"compare", kRecord, path}, path + ": " + field);
    expect_bounded_usage_error({"report", path, "--no-rerun", "-o", dir.path("out/report.md")}, field);
  }
}

TEST(CompareReportInput, ALinkLoopInAFolderIsBadInput) {
  TempDir dir;
  write_json(dir.path("a/r.json"), sample_record());
  fs::create_symlink("loop.json", dir.path("a/loop.json"));
  expect_bounded_usage_error({"compare", dir.path("a"), kRecord}, "loop.json");
  expect_bounded_usage_error({"report", dir.path("a"), "--no-rerun", "-o", dir.path("out/report.md")}, "loop.json");
}

TEST(CompareReportInput, FileNamesThatAreNotUtf8StillGiveJson) {
  TempDir dir;
  write_json(dir.path("a/r.json"), sample_record());
  write_json(dir.path("a/other\xff.json"), Json{{"not", "a record"}});  // named in a note
  const Result result = run_oomlab_bounded({"compare", dir.path("a"), kRecord, "--json"}, {});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  const Json json = Json::parse(result.out);
  EXPECT_EQ(json["notes"].size(), 1u) << result.out;
}

TEST(CompareReportInput, ControlCharactersInNamesNeverReachTheTerminal) {
  TempDir dir;
  Json record = sample_record();
  record["scenario"] = "gpt\x1b]0;owned\x07_train";
  record["variant"] = "bf\r16\n";
  write_json(dir.path("a/r.json"), record);
  write_json(dir.path("a/s.json"), sample_record());  // something in common, so the other is listed
  const Result result = run_oomlab_bounded({"compare", dir.path("a"), kRecord, "--all"}, {});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.signal, 0);
  for (const std::string* text : {&result.out, &result.err}) {
    for (char c : *text) EXPECT_FALSE((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f) << *text;
  }
  EXPECT_NE(result.out.find("gpt\\x1b]0;owned\\x07_train"), std::string::npos) << result.out;
}

}  // namespace
}  // namespace oomlab::cli_test
