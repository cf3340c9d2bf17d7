// The serving questions through bisect, on dry at full scale: how many users a static batch of
// 4k-context requests holds on an RTX 4090, and that the paged cache never runs out (it queues).
#include <gtest/gtest.h>

#include "harness/advise/bisect.hpp"
#include "harness/device/device.hpp"
#include "harness/testing/run_scenario.hpp"

namespace oomlab {
namespace {

RunRequest question(const std::string& variant, KnobSettings set) {
  RunRequest request =
      testing::quiet_request("serve7b", variant, DeviceKind::dry, Scale::full, "rtx4090", std::move(set));
  request.steps = 32;
  return request;
}

TEST(Serve7bBisect, UsersAtFourKContextOnA24GBCard) {
  // Every user at 4096 tokens (3968 prompt + 128 generated): 2 GiB of cache each beside 12.55 GiB
  // of weights in a 23.55 GiB budget.
  const auto answer = advise::bisect_knob(
      question("broken-padded",
               {{"prompt_min", "3968"}, {"prompt_max", "3968"}, {"output_min", "128"}, {"output_max", "128"}}),
      "concurrency");
  EXPECT_FALSE(answer.more_needs_less);
  EXPECT_EQ(answer.fitting, 5);
  EXPECT_EQ(answer.failing, 6);
}

TEST(Serve7bBisect, ThePagedCacheFitsAnyConcurrency) {
  const auto answer = advise::bisect_knob(question("fixed-paged", {}), "concurrency");
  EXPECT_EQ(answer.failing, 0);  // nothing it accepts runs out
}

}  // namespace
}  // namespace oomlab
