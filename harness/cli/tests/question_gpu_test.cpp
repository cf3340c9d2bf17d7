// bisect and advise confirming their dry answers on the GPU: the largest batch bisect finds runs
// on cuda under the same budget, and advise --confirm measures each fitting candidate there.
// Skipped, not passed, without a GPU.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/testing/require_gpu.hpp"

namespace oomlab::cli_test {
namespace {

TEST(QuestionGpu, BisectsLargestBatchIsConfirmedOnCuda) {
  OOMLAB_REQUIRE_GPU();
  Result result = run_oomlab({"bisect", "gpt_train", "--variant", "broken", "--scale", "small", "--knob",
                              "batch", "--device", "cuda", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const auto answer = nlohmann::json::parse(result.out);
  EXPECT_GT(answer["fitting"].get<int>(), 0) << result.out;
  EXPECT_EQ(answer["confirmed_on"], "cuda") << result.out;
  EXPECT_EQ(answer["confirmed"], true) << result.out;
}

TEST(QuestionGpu, AdviseConfirmMeasuresTheFittingCandidatesOnCuda) {
  OOMLAB_REQUIRE_GPU();
  Result result = run_oomlab({"advise", "val_blowup", "--scale", "small", "--confirm", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const auto answer = nlohmann::json::parse(result.out);
  ASSERT_TRUE(answer["best"].is_number()) << result.out;
  std::size_t measured = 0;
  for (const auto& candidate : answer["candidates"]) {
    if (!candidate["fits"].get<bool>()) continue;
    EXPECT_EQ(candidate["throughput_source"], "confirmed on cuda") << candidate.dump();
    EXPECT_GT(candidate["throughput"].get<double>(), 0) << candidate.dump();
    ++measured;
  }
  EXPECT_GT(measured, 0u);
}

}  // namespace
}  // namespace oomlab::cli_test
