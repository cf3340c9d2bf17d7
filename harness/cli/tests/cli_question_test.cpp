// The user's own questions through the real binary: knobs (--set) and their errors, a run with
// settings of its own is a question (exit 0 whatever the outcome), explicit allocator settings
// win over the variant's, every record carries its knobs and need, the table shows the need and
// the OOM message under it; bisect and advise answer on dry.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/run_oomlab.hpp"
#include "harness/runner/atomic_file.hpp"

namespace oomlab::cli_test {
namespace {

nlohmann::json record_of(const std::vector<std::string>& arguments, Result* result_out = nullptr) {
  TempDir dir;
  std::vector<std::string> with_out = arguments;
  with_out.insert(with_out.end(), {"--out", dir.path("r.json")});
  Result result = run_oomlab(with_out);
  if (result_out) *result_out = result;
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return nlohmann::json::parse(read_text_file(dir.path("r.json")));
}

TEST(CliQuestion, ABatchIn16BitsOnASixteenGigabyteCard) {
  Result result;
  const auto record = record_of({"run", "gpt_train", "--variant", "bf16", "--set", "batch=24", "--device",
                                 "dry", "--scale", "full", "--budget", "rtx4060ti-16g"},
                                &result);
  EXPECT_EQ(record["knobs"]["batch"], "24");
  EXPECT_EQ(record["knobs"]["dtype"], "bf16");
  EXPECT_EQ(record["outcome"]["status"], "ok");
  EXPECT_GT(record["memory"]["need"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(result.out.find("match"), std::string::npos) << "a question's table has no story columns\n" << result.out;
  EXPECT_NE(result.out.find("need"), std::string::npos) << result.out;
}

TEST(CliQuestion, AWhatIfIsAnAnswerNotAFailure) {
  // The README's example: with these settings the broken variant fits. Exit 0: a question.
  TempDir dir;
  Result result =
      run_oomlab({"run", "fragmentation", "--variant", "broken", "--device", "dry", "--out", dir.path("r.json")},
                 {{"OOMLAB_ALLOC_CONF", "max_split_size_mb:128,expandable_segments:true"}});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(nlohmann::json::parse(read_text_file(dir.path("r.json")))["outcome"]["status"], "ok");
  // A budget of one's own is a question too, even a huge one.
  EXPECT_EQ(run_oomlab({"run", "gpt_train", "--variant", "broken", "--device", "dry", "--budget", "1TiB"}).exit_code,
            0);
  // The plain run still tests the story.
  EXPECT_EQ(run_oomlab({"run", "fragmentation", "--variant", "broken", "--device", "dry"}).exit_code, 0);
}

TEST(CliQuestion, ExplicitAllocatorSettingsWinOverTheVariants) {
  const auto record = record_of({"run", "fragmentation", "--variant", "fixed-expandable", "--device", "dry",
                                 "--scale", "full", "--alloc-conf", "expandable_segments:false"});
  EXPECT_NE(record["alloc_conf"].get<std::string>().find("expandable_segments:false"), std::string::npos)
      << record["alloc_conf"];
  EXPECT_EQ(record["outcome"]["status"], "oom") << "without expandable segments the story's OOM returns";
}

TEST(CliQuestion, TheNeedAndTheMessageOfAnOom) {
  Result result;
  const auto record = record_of({"run", "gpt_train", "--variant", "broken", "--device", "dry", "--scale", "full",
                                 "--budget", "rtx4060ti-16g"},
                                &result);
  EXPECT_EQ(record["outcome"]["diagnosis"], "capacity") << "it needs ~40 GiB: not fragmentation";
  const auto need = record["memory"]["need"].get<std::uint64_t>();
  EXPECT_GT(need, 39ull << 30);
  EXPECT_LT(need, 41ull << 30);
  EXPECT_NE(result.out.find("short by"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("diagnosis: capacity"), std::string::npos) << "the message is under the table\n"
                                                                       << result.out;
  EXPECT_NE(result.out.find("block "), std::string::npos) << "the message says where\n" << result.out;
  // An unlimited budget runs with no cap.
  const auto unlimited = record_of({"run", "gpt_train", "--variant", "broken", "--device", "dry", "--scale", "full",
                                    "--budget", "unlimited"});
  EXPECT_EQ(unlimited["outcome"]["status"], "ok");
  EXPECT_EQ(unlimited["memory"]["need"], need) << "the need does not depend on the budget";
}

TEST(CliQuestion, TheDiagnosisNeverRepeatsASettingThatIsOn) {
  const auto record = record_of({"run", "long_context", "--variant", "broken", "--device", "dry", "--scale", "full",
                                 "--alloc-conf", "expandable_segments:true"});
  EXPECT_EQ(record["outcome"]["diagnosis"], "capacity");
  EXPECT_EQ(record["outcome"]["message"].get<std::string>().find("expandable_segments:true so"), std::string::npos)
      << record["outcome"]["message"];
}

TEST(CliQuestion, ALeakIsNamedBeforeTheDetectorConfirmsIt) {
  const auto record = record_of({"run", "srgan_leak", "--variant", "broken", "--device", "dry", "--scale", "full",
                                 "--budget", "rtx4060ti-8g"});
  EXPECT_EQ(record["outcome"]["status"], "oom");
  EXPECT_EQ(record["outcome"]["diagnosis"], "leak");
  const std::string message = record["outcome"]["message"];
  EXPECT_NE(message.find("epoch_stats.append"), std::string::npos) << message;
  EXPECT_NE(message.find("retained"), std::string::npos) << message;
}

TEST(CliQuestion, BadKnobsAreOneClearLine) {
  const std::vector<std::string> run = {"run", "gpt_train", "--device", "dry", "--variant", "broken"};
  auto with = [&](const std::string& set) {
    std::vector<std::string> arguments = run;
    arguments.insert(arguments.end(), {"--set", set});
    return arguments;
  };
  expect_usage_error(with("batch=-1"), "batch");
  expect_usage_error(with("dtype=f8"), "f8");
  expect_usage_error(with("seq=0"), "seq");
  expect_usage_error(with("nonsense=1"), "no knob");
  expect_usage_error(with("batch"), "knob=value");
  expect_usage_error(with("batch=2,batch=4"), "twice");
  expect_usage_error({"run", "gpt_train", "--device", "dry", "--variant", "grad-accum", "--set", "batch=30"},
                     "micro_batches");
  expect_usage_error(with("optimizer=adamw8bit,offload=true"), "does not combine with offload");
  expect_usage_error(with("optimizer=sgd"), "sgd");
  expect_usage_error(with("quantize_base=true"), "needs LoRA adapters");
  expect_usage_error(with("rank=-1"), "rank");
  expect_usage_error(with("targets=q"), "targets");
}

TEST(CliQuestion, LoraKnobsAnswerTheSixteenGigabyteQuestion) {
  // A 7B model with LoRA on a 16 GB card: fits; full fine-tuning with f32 AdamW does not.
  Result lora = run_oomlab({"run", "train7b", "--variant", "lora", "--device", "dry", "--scale", "full",
                            "--budget", "rtx4060ti-16g"});
  EXPECT_EQ(lora.exit_code, 0) << lora.err;
  EXPECT_NE(lora.out.find("lora     dry     full   ok"), std::string::npos) << lora.out;
  Result full = run_oomlab({"run", "train7b", "--variant", "lora", "--set", "rank=0", "--device", "dry",
                            "--scale", "full", "--budget", "rtx4060ti-16g"});
  EXPECT_EQ(full.exit_code, 0) << full.err;  // a question: exit 0 whatever the outcome
  EXPECT_NE(full.out.find("oom"), std::string::npos) << full.out;
}

TEST(CliQuestion, ListShowsAScenariosKnobs) {
  Result result = run_oomlab({"list", "gpt_train"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const char* knob : {"model", "batch", "seq", "dtype", "attention", "checkpointing", "micro_batches", "offload",
                           "rank", "targets", "quantize_base",
                           "optimizer"}) {
    EXPECT_NE(result.out.find(knob), std::string::npos) << knob;
  }
  EXPECT_NE(result.out.find("gpt2-1.5b"), std::string::npos);
  expect_usage_error({"list", "no-such-scenario"}, "no-such-scenario");
}

TEST(CliQuestion, ListModelsShowsThePresetsWithParametersAndBytes) {
  Result result = run_oomlab({"list", "--models"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const char* part : {"llama-3-8b", "8.03B", "29.92GiB", "14.96GiB", "32 heads / 8 KV, vocab 128256",
                           "qwen2.5-7b", "mistral-7b", "gpt2-medium", "= gpt2-350m", "nf4"}) {
    EXPECT_NE(result.out.find(part), std::string::npos) << part << "\n" << result.out;
  }
  expect_usage_error({"list", "--models", "gpt_train"}, "give no scenario");
}

TEST(CliQuestion, BisectAndAdviseAnswerOnDry) {
  Result bisect = run_oomlab({"bisect", "gpt_train", "--knob", "batch", "--json"});
  ASSERT_EQ(bisect.exit_code, 0) << bisect.err;
  const auto answer = nlohmann::json::parse(bisect.out);
  EXPECT_EQ(answer["question"], "largest batch");
  EXPECT_GT(answer["fitting"].get<int>(), 0);
  EXPECT_EQ(answer["failing"].get<int>(), answer["fitting"].get<int>() + 1);

  Result budget = run_oomlab({"bisect", "fragmentation"});
  EXPECT_EQ(budget.exit_code, 0) << budget.err;
  EXPECT_NE(budget.out.find("fits a budget of"), std::string::npos) << budget.out;
  // The answer and the budget a step below it read differently ("12.40GiB (fails at 12.40GiB)").
  const std::size_t fits_at = budget.out.find(" MiB; "),
                    fails_at = budget.out.find(" MiB fails: searched in 1 MiB steps");
  ASSERT_NE(fails_at, std::string::npos) << budget.out;
  const std::size_t open = budget.out.rfind('(', fits_at);
  const long fit_mib = std::stol(budget.out.substr(open + 1, fits_at - open - 1));
  const long fail_mib = std::stol(budget.out.substr(fits_at + 6, fails_at - fits_at - 6));
  EXPECT_EQ(fit_mib, fail_mib + 1) << budget.out;

  // Costs from the committed H200 records: the fastest measured fix is the cheapest.
  Result advise = run_oomlab({"advise", "gpt_train", "--results", std::string(OOMLAB_SOURCE_DIR) + "/results/h200"});
  EXPECT_EQ(advise.exit_code, 0) << advise.err;
  EXPECT_NE(advise.out.find("cheapest fix that fits (the fastest of those whose cost was measured)"),
            std::string::npos) << advise.out;
  EXPECT_NE(advise.out.find("tokens/s (committed"), std::string::npos) << advise.out;
  EXPECT_EQ(advise.out.find("..."), std::string::npos) << "no candidate name is cut\n" << advise.out;
  // With nothing measured, nothing is called cheapest.
  TempDir empty;
  Result unpriced = run_oomlab({"advise", "gpt_train", "--results", empty.path()});
  EXPECT_EQ(unpriced.exit_code, 0) << unpriced.err;
  EXPECT_EQ(unpriced.out.find("cheapest fix"), std::string::npos) << unpriced.out;
  EXPECT_NE(unpriced.out.find("none is called cheapest"), std::string::npos) << unpriced.out;
  // A leak that fits the budget for the run's steps is still a leak (run reports it; advise said
  // "nothing to fix").
  Result growing = run_oomlab({"advise", "srgan_leak", "--budget", "rtx4060ti-16g"});
  EXPECT_EQ(growing.exit_code, 1) << growing.out << growing.err;
  EXPECT_NE(growing.out.find("memory grows +480.00MiB per step"), std::string::npos) << growing.out;
  EXPECT_EQ(growing.out.find("nothing to fix"), std::string::npos) << growing.out;
  EXPECT_EQ(run_oomlab({"advise", "srgan_leak", "--steps", "3", "--budget", "rtx4060ti-16g"}).exit_code, 0)
      << "3 steps are too few to see growth: --steps is taken";
  Result leak = run_oomlab({"advise", "srgan_leak", "--json"});
  EXPECT_EQ(leak.exit_code, 1) << "no memory remedy for a leak\n" << leak.err;
  EXPECT_EQ(nlohmann::json::parse(leak.out)["candidates"].size(), 0u);
  expect_usage_error({"bisect", "gpt_train", "--knob", "dtype"}, "dtype");
}

}  // namespace
}  // namespace oomlab::cli_test
