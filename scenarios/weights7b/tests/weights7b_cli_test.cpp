// The oomlab binary end to end: a bad checkpoint given to weights7b is bad input (one
// "oomlab: error:" line, exit 2) found before any run, not a failed run (exit 1).
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/cli/tests/run_oomlab.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/models/safetensors/safetensors_writer.hpp"
#include "scenarios/models/safetensors/sharded_checkpoint.hpp"
#include "scenarios/models/safetensors/tests/file_image.hpp"

namespace oomlab::cli_test {
namespace {

bool is_one_error_line(const std::string& err) {
  return err.rfind("oomlab: error: ", 0) == 0 && err.find('\n') == err.size() - 1;
}

// A real-sized llama-7b f32 checkpoint in two shards, as Hugging Face lays it out, whose data
// are holes: the headers are the 7B layout, the files are 27 GB long, no disk is used. Dry runs
// and the checks before a run read headers only. Returns the directory.
std::string write_sparse_7b_shards(const TempDir& dir) {
  const auto layout = safetensors::llama_layout(safetensors::llama_preset("llama-7b"), DType::f32);
  const std::size_t half = layout.size() / 2;
  const std::vector<std::vector<safetensors::TensorEntry>> shards = {
      {layout.begin(), layout.begin() + static_cast<std::ptrdiff_t>(half)},
      {layout.begin() + static_cast<std::ptrdiff_t>(half), layout.end()}};
  nlohmann::json index;
  std::uint64_t total = 0;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const std::string name = "model-0000" + std::to_string(s + 1) + "-of-00002.safetensors";
    const auto tensors = safetensors::assign_offsets(shards[s]);
    const std::string json = safetensors::serialize_header(tensors, {{"format", "pt"}});
    safetensors::testing::write_file_image(dir.path(name), json);
    EXPECT_EQ(::truncate(dir.path(name).c_str(), static_cast<off_t>(8 + json.size() + tensors.back().end)), 0);
    for (const auto& tensor : tensors) index["weight_map"][tensor.name] = name;
    total += tensors.back().end;
  }
  index["metadata"]["total_size"] = total;
  std::ofstream(dir.path(safetensors::kIndexFileName)) << index.dump(2);
  return dir.path();
}

TEST(Weights7bCli, ATwoByTwoCheckpointIsBadInputWithExitCode2) {
  TempDir dir;
  const std::string path = dir.path("x.safetensors");
  safetensors::write_safetensors(path, {{"w", DType::f32, {2, 2}, std::vector<std::uint8_t>(16)}});
  const Result result = run_oomlab({"run", "weights7b", "--variant", "broken", "--device", "dry", "--scale",
                                    "full", "--out", dir.path("record.json")},
                                   {{"OOMLAB_WEIGHTS7B_F32", path}});
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_TRUE(is_one_error_line(result.err)) << result.err;
  EXPECT_NE(result.err.find("tensor 'w' f32 (2, 2) is not in the llama-7b f32 layout"), std::string::npos)
      << result.err;
  EXPECT_EQ(result.out, "");  // no results table: nothing ran
}

TEST(Weights7bCli, AMalformedCheckpointIsBadInputWithExitCode2) {
  TempDir dir;
  const std::string path = dir.path("deep.safetensors");
  safetensors::testing::write_file_image(path, std::string(100000, '[') + std::string(100000, ']'));
  const Result result = run_oomlab({"run", "weights7b", "--variant", "all", "--device", "dry"},
                                   {{"OOMLAB_WEIGHTS7B_F32", path}});
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_TRUE(is_one_error_line(result.err)) << result.err;
  EXPECT_NE(result.err.find("nested deeper than 64"), std::string::npos) << result.err;
}

TEST(Weights7bCli, AShardedSevenBCheckpointPlansTheStory) {
  TempDir dir;
  const std::string shards = write_sparse_7b_shards(dir);
  const Result result = run_oomlab({"run", "weights7b", "--variant", "fixed", "--device", "dry", "--scale", "full"},
                                   {{"OOMLAB_WEIGHTS7B_F32", shards}});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
}

TEST(Weights7bCli, SetModelThatIsNotTheFileIsRefusedNamingBoth) {
  TempDir dir;
  const std::string shards = write_sparse_7b_shards(dir);
  const Result result = run_oomlab({"run", "weights7b", "--variant", "fixed", "--device", "dry", "--scale", "full",
                                    "--set", "model=llama-13b"},
                                   {{"OOMLAB_WEIGHTS7B_F32", shards}});
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_TRUE(is_one_error_line(result.err)) << result.err;
  EXPECT_NE(result.err.find("OOMLAB_WEIGHTS7B_F32: " + dir.path(safetensors::kIndexFileName) +
                            ": the file is a llama-7b f32 checkpoint; --set model=llama-13b loads llama-13b "
                            "(--set model=llama-7b loads this file)"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(result.out, "");
}

TEST(Weights7bCli, AShardOutsideTheIndexDirectoryIsBadInput) {
  TempDir dir;
  std::ofstream(dir.path(safetensors::kIndexFileName))
      << R"({"weight_map": {"lm_head.weight": "../etc/x.safetensors"}})";
  const Result result = run_oomlab({"run", "weights7b", "--variant", "all", "--device", "dry"},
                                   {{"OOMLAB_WEIGHTS7B_F32", dir.path()}});
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_TRUE(is_one_error_line(result.err)) << result.err;
  EXPECT_NE(result.err.find("which is not a file name: shards sit beside the index"), std::string::npos) << result.err;
}

TEST(Weights7bCli, MeaninglessKnobsAreBadInput) {
  expect_usage_error(
      {"run", "weights7b", "--variant", "fixed-bf16-file", "--device", "dry", "--set", "dtype=f32"},
      "--variant fixed-bf16-file streams a bf16 file; for dtype=f32 run --variant fixed --set dtype=f32");
  expect_usage_error({"run", "weights7b", "--variant", "broken", "--device", "dry", "--set", "chunk_kib=1024"},
                     "has no staging chunk");
  expect_usage_error({"run", "weights7b", "--variant", "fixed", "--device", "dry", "--set", "model=llama-65b"},
                     "llama-70b");
}

TEST(Weights7bCli, SeventyBPlansOnDryAsAQuestion) {
  // A question (--set) exits 0 whatever the outcome: 70B in bf16 (138 GB) fits an H200 ...
  const Result fits = run_oomlab({"run", "weights7b", "--variant", "fixed", "--device", "dry", "--scale", "full",
                                  "--set", "model=llama-70b", "--budget", "h200"});
  EXPECT_EQ(fits.exit_code, 0) << fits.out << fits.err;
  EXPECT_NE(fits.out.find("ok"), std::string::npos) << fits.out;
  // ... and not the story's 24 GiB card.
  const Result oom = run_oomlab({"run", "weights7b", "--variant", "fixed", "--device", "dry", "--scale", "full",
                                 "--set", "model=llama-70b"});
  EXPECT_EQ(oom.exit_code, 0) << oom.out << oom.err;
  EXPECT_NE(oom.out.find("oom"), std::string::npos) << oom.out;
}

TEST(Weights7bCli, ListShowsTheKnobsAndEachVariantsValues) {
  const Result result = run_oomlab({"list", "weights7b", "--scale", "full"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const char* part : {"model", "llama-tiny, llama-small, llama-7b, llama-13b, llama-70b", "dtype",
                           "f32, bf16, f16", "chunk_kib", "values at scale full"}) {
    EXPECT_NE(result.out.find(part), std::string::npos) << part << " not in:\n" << result.out;
  }
  const auto row = [&](const std::string& variant) {
    const auto at = result.out.find("\n  " + variant + " ");
    return at == std::string::npos ? std::string() : result.out.substr(at + 1, result.out.find('\n', at + 1) - at - 1);
  };
  EXPECT_NE(row("fixed-bf16-file").find("llama-7b"), std::string::npos) << result.out;
  EXPECT_NE(row("fixed-bf16-file").find("bf16"), std::string::npos) << result.out;
  EXPECT_NE(row("fixed").find("65536"), std::string::npos) << result.out;
}

}  // namespace
}  // namespace oomlab::cli_test
