#include "harness/extrapolate/knob_points.hpp"

#include <stdexcept>

#include <gtest/gtest.h>

namespace oomlab::extrapolate {
namespace {

TEST(KnobPoints, OneValuePerSnapshotInTheFilesOrder) {
  const KnobPoints points = parse_knob_points("batch=4,1,2", 3);
  EXPECT_EQ(points.name, "batch");
  EXPECT_EQ(points.values, (std::vector<std::int64_t>{4, 1, 2}));
}

void expect_refused(const std::string& text, std::size_t snapshots, const std::string& fragment) {
  try {
    parse_knob_points(text, snapshots);
    FAIL() << text << " was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}

TEST(KnobPoints, RefusesWhatCannotBeFitted) {
  expect_refused("batch=1,1", 2, "given twice");
  expect_refused("batch=1,2", 3, "2 values for 3 snapshots");
  expect_refused("batch=1,2.5", 2, "not a whole number");
  expect_refused("batch=0,2", 2, "not a whole number");
  expect_refused("batch=-1,2", 2, "not a whole number");
  expect_refused("batch=1,", 2, "not a whole number");
  expect_refused("=1,2", 2, "expected NAME=");
  expect_refused("batch", 2, "expected NAME=");
  expect_refused("batch=1,99999999999", 2, "not a whole number");
}

TEST(KnobPoints, TargetValue) {
  EXPECT_EQ(parse_knob_value("32", "--at"), 32);
  EXPECT_THROW(parse_knob_value("3.5", "--at"), std::invalid_argument);
  EXPECT_THROW(parse_knob_value("", "--at"), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::extrapolate
