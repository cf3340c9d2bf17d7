#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/extrapolate/tests/recordings.hpp"
#include "harness/runner/run_record.hpp"

namespace oomlab::extrapolate {
namespace {

using cli_test::expect_usage_error;
using cli_test::run_oomlab;
using testing::TrainingShape;
using testing::training_program;

class ExtrapolateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int b : {1, 2, 4}) training_program(b).write(file("b" + std::to_string(b)));
    TrainingShape moved;
    moved.moved_line = 22;
    training_program(2, moved).write(file("moved2"));
    testing::SyntheticProgram on_device_1;
    on_device_1.set_device(1);
    on_device_1.free(on_device_1.alloc(4096, "train.py", 3));
    on_device_1.write(file("device1"));
    std::ofstream(file("not_a_pickle")) << "hello";
    // A snapshot taken with history off: segments only, nothing to align.
    std::ofstream(file("no_history"), std::ios::binary)
        << replay::testing::pickled(replay::testing::py_dict({{"segments", replay::testing::py_list({})}}));
  }
  std::string file(const std::string& name) const { return dir_.path(name + ".pickle"); }

  cli_test::TempDir dir_;
};

TEST_F(ExtrapolateCli, PredictsThePeakOfTheProgramAtTheTarget) {
  const auto result =
      run_oomlab({"extrapolate", file("b1"), file("b2"), file("b4"), "--knob", "batch=1,2,4", "--at", "32"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const testing::Peaks real = testing::truth(32);
  EXPECT_NE(result.out.find("prediction at batch=32: exact"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("(" + std::to_string(real.allocated) + " B)"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("(" + std::to_string(real.reserved) + " B)"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("7 fitted exactly, 7 of them checked"), std::string::npos) << result.out;
}

TEST_F(ExtrapolateCli, JsonAndTheRecordCompareReads) {
  const std::string out = dir_.path("at32.json");
  const auto result = run_oomlab({"extrapolate", file("b1"), file("b2"), "--knob", "batch=1,2", "--at", "32",
                                  "--budget", "200MiB", "--json", "--out", out});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::ordered_json::parse(result.out);
  EXPECT_EQ(json["prediction"]["outcome"], "oom");
  EXPECT_EQ(json["prediction"]["kind"], "exact");
  EXPECT_EQ(json["prediction"]["oom"]["diagnosis"], "capacity");
  EXPECT_EQ(json["extrapolation"]["fitted"], 7);
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  const RunRecord record = run_record_from_text(text.str());
  EXPECT_EQ(record.scenario, "extrapolate");
  EXPECT_EQ(record.knobs.at("batch"), "32");
  EXPECT_EQ(record.outcome.status, OutcomeStatus::oom);
  EXPECT_EQ(record.memory.need, json["prediction"]["need_allocated"].get<std::uint64_t>());
}

TEST_F(ExtrapolateCli, BisectAnswersWithTheLargestBatch) {
  auto result = run_oomlab({"extrapolate", file("b1"), file("b2"), file("b4"), "--knob", "batch=1,2,4", "--bisect",
                            "--budget", "1GiB", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::ordered_json::parse(result.out);
  EXPECT_EQ(json["bisect"]["largest"], 84);
  EXPECT_EQ(json["prediction"]["at"], 84);
  EXPECT_EQ(json["prediction"]["outcome"], "ok");
  result = run_oomlab({"extrapolate", file("b1"), file("b2"), "--knob", "batch=1,2", "--bisect", "--budget", "32MiB"});
  EXPECT_EQ(result.exit_code, 1) << "nothing fits";
  EXPECT_NE(result.out.find("nothing fits 32MiB"), std::string::npos) << result.out;
}

TEST_F(ExtrapolateCli, ChangedProgramStopsAtTheRequestAndLine) {
  expect_usage_error({"extrapolate", file("b1"), file("moved2"), "--knob", "batch=1,2", "--at", "8"},
                     "request 2 of " + file("moved2") +
                         " (trace entry 2: alloc 11.44MiB at model.py:22 forward) has no "
                         "counterpart in " +
                         file("b1"));
}

TEST_F(ExtrapolateCli, HostileAndMismatchedInputsAreOneLine) {
  const std::string b1 = file("b1"), b2 = file("b2");
  expect_usage_error({"extrapolate", b1, file("device1"), "--knob", "batch=1,2", "--at", "8"}, "traces device 0 and");
  expect_usage_error({"extrapolate", b1, b2, "--knob", "batch=1,1", "--at", "8"}, "given twice");
  expect_usage_error({"extrapolate", b1, b2, "--knob", "batch=1,2,4", "--at", "8"}, "3 values for 2 snapshots");
  expect_usage_error({"extrapolate", b1, b2, "--knob", "batch=1,2.5", "--at", "8"}, "not a whole number");
  expect_usage_error({"extrapolate", b1, b2, "--knob", "batch=1,2", "--at", "eight"}, "--at: 'eight'");
  expect_usage_error({"extrapolate", b1, b2, "--knob", "batch=1,2"}, "give --at VALUE");
  expect_usage_error({"extrapolate", b1, b2, "--knob", "batch=1,2", "--bisect"}, "--bisect needs --budget");
  expect_usage_error({"extrapolate", b1, "--knob", "batch=1", "--at", "8"}, "two or more snapshots");
  expect_usage_error({"extrapolate", b1, b2, "--knob", "batch=1,2", "--at", "8", "--fit", "quadratic"},
                     "three snapshots");
  expect_usage_error({"extrapolate", b1, b2, "--knob", "batch=1,2", "--at", "8", "--fit", "cubic"}, "--fit 'cubic'");
  expect_usage_error({"extrapolate", b1, b2, "--knob", "batch=1,2", "--at", "8", "--budget", "12"}, "invalid budget");
  expect_usage_error({"extrapolate", b1, file("not_a_pickle"), "--knob", "batch=1,2", "--at", "8"}, "not_a_pickle");
  expect_usage_error({"extrapolate", b1, file("missing"), "--knob", "batch=1,2", "--at", "8"}, "missing");
  expect_usage_error({"extrapolate", b1, file("no_history"), "--knob", "batch=1,2", "--at", "8"},
                     "no allocation history");
  expect_usage_error({"extrapolate", b1, b2, "--knob", "batch=1,2", "--at", "2000000000"}, "more than any GPU holds");
  expect_usage_error({"extrapolate", b1, b2, "--knob", "batch=1,2", "--at", "4000000000"}, "not a whole number");
}

}  // namespace
}  // namespace oomlab::extrapolate
