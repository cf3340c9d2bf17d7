// The run record's JSON: a full round trip, absent values as null, and clear errors.
#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>
#include <string>

#include "harness/runner/run_record.hpp"

namespace oomlab {
namespace {

RunRecord full_record() {
  RunRecord r;
  r.scenario = "fragmentation";
  r.variant = "broken";
  r.device = {"cuda",
              "NVIDIA H200",
              "9.0",
              150'000'000'000ull,
              13000,
              13000,
              "sm_80 + PTX compute_80",
              "compute_80 PTX (JIT)",
              {{"attention_backward", "mma.sync"}, {"conv", "mma.sync"}}};
  r.budget = {12'348'030'976ull, "rtx3060-12g", "rtx3060-12g (11.50GiB)"};
  r.scale = "small";
  r.knobs = {{"batch", "24"}, {"dtype", "bf16"}};
  r.steps = 50;
  r.outcome = {OutcomeStatus::oom, "fragmentation", 12, "CUDA out of memory. Tried to allocate\n2 GiB", 0};
  r.memory.peak_allocated = 9'000'000'123ull;
  r.memory.peak_reserved = 11'000'000'000ull;
  r.memory.peak_device_used = 11'600'000'000ull;
  r.memory.need = 42'000'000'000ull;
  r.memory.need_reserved = 42'500'000'000ull;
  r.memory.per_tag_peak = {{"activations", 123456}, {"weights", 1ull << 33}, {"other", 0}};
  r.memory.num_ooms = 2;
  r.memory.num_alloc_retries = 3;
  r.throughput = {0.1 + 0.2, "GB/s"};  // a double that needs all 17 digits
  r.step_seconds = {0.0123456789012345, 1e-9, 3.5};
  r.warmup_steps = 1;
  r.metrics = {{"empty_cache_seconds", 0.000321}, {"segments_created", 17}};
  r.warnings = {"trace not written: cannot write /dev/full: writing: No space left on device"};
  r.alloc_conf = "max_split_size_mb:128,expandable_segments:false";
  r.expected = "oom";
  r.matches_expectation = true;
  r.git_commit = "0123456789ab";
  r.timestamp = "2025-01-31T12:00:00Z";
  r.oomlab_version = "0.1.0";
  return r;
}

TEST(RunRecord, JsonRoundTripKeepsEveryField) {
  RunRecord original = full_record();
  std::string text = to_json(original).dump(2);
  RunRecord parsed = run_record_from_text(text);
  EXPECT_TRUE(parsed == original) << text;
  EXPECT_EQ(to_json(parsed).dump(2), text);
}

TEST(RunRecord, AbsentValuesAreNullAndRoundTrip) {
  RunRecord original = full_record();
  original.outcome = {OutcomeStatus::ok, "", -1, "", 0};
  original.throughput = {0, ""};
  original.device.compute_capability = "";
  original.budget.profile = "";
  original.memory.need = 0;
  original.memory.need_reserved = 0;
  auto json = to_json(original);
  EXPECT_TRUE(json["memory"]["need"].is_null());
  EXPECT_TRUE(json["outcome"]["diagnosis"].is_null());
  EXPECT_TRUE(json["outcome"]["step"].is_null());
  EXPECT_TRUE(json["outcome"]["signal"].is_null());
  EXPECT_TRUE(json["throughput"]["unit"].is_null());
  EXPECT_TRUE(json["budget"]["profile"].is_null());
  EXPECT_TRUE(run_record_from_json(json) == original);
}

TEST(RunRecord, WhatRanIsWrittenOnlyForCuda) {
  RunRecord cuda = full_record();
  auto json = to_json(cuda);
  EXPECT_EQ(json["device"]["image"], "compute_80 PTX (JIT)");
  EXPECT_EQ(json["device"]["engines"]["conv"], "mma.sync");
  RunRecord dry = full_record();
  dry.device = {"dry", "dry (no backing)", "", 0, 0, 0, "", "", {}};
  json = to_json(dry);
  for (const char* field : {"built_for", "image", "engines"}) EXPECT_FALSE(json["device"].contains(field)) << field;
  EXPECT_TRUE(run_record_from_json(json) == dry);
}

TEST(RunRecord, CrashRoundTripsItsSignal) {
  RunRecord original = full_record();
  original.outcome = {OutcomeStatus::crash, "", -1, "killed by signal 11 (SIGSEGV)", 11};
  auto json = to_json(original);
  EXPECT_EQ(json["outcome"]["status"], "crash");
  EXPECT_EQ(json["outcome"]["signal"], 11);
  EXPECT_TRUE(run_record_from_json(json) == original);
}

TEST(RunRecord, FieldsAppearInSchemaOrder) {
  auto json = to_json(full_record());
  auto it = json.begin();
  EXPECT_EQ(it.key(), "schema_version");
  EXPECT_EQ(json["schema_version"], kRunRecordSchemaVersion);
  EXPECT_EQ((++it).key(), "scenario");
}

TEST(RunRecord, OtherSchemaVersionIsRejected) {
  for (int version : {0, kRunRecordSchemaVersion + 1}) {
    auto json = to_json(full_record());
    json["schema_version"] = version;
    const std::string named = "schema_version " + std::to_string(version);
    try {
      run_record_from_json(json);
      FAIL() << named << " must be rejected";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  }
}

TEST(RunRecord, WarmupStepsAreWrittenAfterStepSecondsAndRoundTrip) {
  RunRecord original = full_record();
  original.warmup_steps = 2;
  auto json = to_json(original);
  EXPECT_EQ(json["warmup_steps"], 2);
  auto it = json.find("step_seconds");
  ASSERT_NE(it, json.end());
  EXPECT_EQ((++it).key(), "warmup_steps");
  const RunRecord parsed = run_record_from_json(json);
  EXPECT_EQ(parsed.warmup_steps, 2);
  EXPECT_TRUE(parsed == original);
  original.warmup_steps = 0;
  EXPECT_FALSE(parsed == original) << "equality must compare warmup_steps";
}

TEST(RunRecord, Version1RecordsWithoutWarmupStepsStillRead) {
  // A record as oomlab wrote it before warm-ups: version 1, no warmup_steps, a throughput over
  // every step, which is what warmup_steps 0 means.
  auto json = to_json(full_record());
  json["schema_version"] = 1;
  json.erase("warmup_steps");
  json.erase("warnings");
  json.erase("knobs");
  json["memory"].erase("need");
  json["memory"].erase("need_reserved");
  const RunRecord parsed = run_record_from_json(json);
  EXPECT_EQ(parsed.warmup_steps, 0);
  EXPECT_EQ(parsed.schema_version, kRunRecordSchemaVersion);  // read as the current version
  RunRecord expected = full_record();
  expected.warmup_steps = 0;
  expected.warnings.clear();  // version 1 had none of these
  expected.knobs.clear();
  expected.memory.need = 0;
  expected.memory.need_reserved = 0;
  EXPECT_TRUE(parsed == expected);
}

TEST(RunRecord, Version2RecordsWithoutVersion3FieldsStillRead) {
  auto json = to_json(full_record());
  json["schema_version"] = 2;
  json.erase("warnings");
  json.erase("knobs");
  json["memory"].erase("need");
  json["memory"].erase("need_reserved");
  const RunRecord parsed = run_record_from_json(json);
  EXPECT_TRUE(parsed.warnings.empty());
  EXPECT_TRUE(parsed.knobs.empty());
  EXPECT_EQ(parsed.memory.need, 0u);
  json["schema_version"] = kRunRecordSchemaVersion;
  EXPECT_THROW(run_record_from_json(json), std::runtime_error);  // the current version has them
}

// JSON has no NaN: nlohmann writes null. A record must still be readable (an older oomlab
// wrote such nulls and the parent then lost the run), so null metrics are skipped on reading
// and never written.
TEST(RunRecord, NonFiniteNumbersAreNeverWrittenAndNullIsTolerated) {
  RunRecord original = full_record();
  original.metrics["per_element"] = std::numeric_limits<double>::quiet_NaN();
  original.throughput.value = std::numeric_limits<double>::infinity();
  const auto json = to_json(original);
  EXPECT_TRUE(json["metrics"]["per_element"].is_null());
  EXPECT_TRUE(json["throughput"]["value"].is_null());
  const RunRecord parsed = run_record_from_text(json.dump());
  EXPECT_EQ(parsed.metrics.count("per_element"), 0u);
  EXPECT_EQ(parsed.metrics.at("segments_created"), 17);
  EXPECT_EQ(parsed.throughput.value, 0);
  auto mistyped = json;
  mistyped["metrics"]["per_element"] = "many";
  EXPECT_THROW(run_record_from_json(mistyped), std::runtime_error);
}

TEST(RunRecord, CurrentRecordsNeedAValidWarmupSteps) {
  auto json = to_json(full_record());
  json.erase("warmup_steps");
  try {
    run_record_from_json(json);
    FAIL() << "a version 2 record without warmup_steps must be rejected";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("warmup_steps"), std::string::npos) << e.what();
  }
  json = to_json(full_record());
  json["warmup_steps"] = -1;
  EXPECT_THROW(run_record_from_json(json), std::runtime_error);
  json["warmup_steps"] = "one";
  EXPECT_THROW(run_record_from_json(json), std::runtime_error);
}

TEST(RunRecord, MissingOrMistypedFieldsAreNamed) {
  auto json = to_json(full_record());
  json["memory"].erase("peak_reserved");
  try {
    run_record_from_json(json);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("memory.peak_reserved"), std::string::npos) << e.what();
  }
  json = to_json(full_record());
  json["steps"] = "fifty";
  try {
    run_record_from_json(json);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("steps"), std::string::npos) << e.what();
  }
  json = to_json(full_record());
  json["outcome"]["status"] = "exploded";
  EXPECT_THROW(run_record_from_json(json), std::runtime_error);
  EXPECT_THROW(run_record_from_text("{not json"), std::runtime_error);
  EXPECT_THROW(run_record_from_text("[]"), std::runtime_error);
}

TEST(RunRecord, ExpectationMatching) {
  EXPECT_TRUE(outcome_matches("oom", OutcomeStatus::oom));
  EXPECT_TRUE(outcome_matches("ok", OutcomeStatus::ok));
  EXPECT_TRUE(outcome_matches("error", OutcomeStatus::error));
  EXPECT_FALSE(outcome_matches("oom", OutcomeStatus::ok));
  EXPECT_FALSE(outcome_matches("ok", OutcomeStatus::oom));
  EXPECT_FALSE(outcome_matches("ok", OutcomeStatus::error));
  for (const char* expected : {"ok", "oom", "error"}) {
    EXPECT_FALSE(outcome_matches(expected, OutcomeStatus::crash));
  }
}

TEST(RunRecord, StatusNamesRoundTrip) {
  for (auto status : {OutcomeStatus::ok, OutcomeStatus::oom, OutcomeStatus::crash,
                      OutcomeStatus::error}) {
    EXPECT_EQ(parse_outcome_status(outcome_status_name(status)), status);
  }
  EXPECT_FALSE(parse_outcome_status("OK").has_value());
}

TEST(BuildInfo, TimestampIsIso8601Utc) {
  std::string t = utc_timestamp();
  ASSERT_EQ(t.size(), 20u) << t;
  EXPECT_EQ(t[4], '-');
  EXPECT_EQ(t[10], 'T');
  EXPECT_EQ(t.back(), 'Z');
}

TEST(BuildInfo, GitCommitFromEnvironmentWins) {
  ::setenv("OOMLAB_GIT_COMMIT", "feedface", 1);
  EXPECT_EQ(git_commit(), "feedface");
  ::unsetenv("OOMLAB_GIT_COMMIT");
  EXPECT_FALSE(git_commit().empty());
  EXPECT_EQ(oomlab_version(), "0.1.0");
}

}  // namespace
}  // namespace oomlab
